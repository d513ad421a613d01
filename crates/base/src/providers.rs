//! Every built-in provider, one entry each: its name, the wire API it speaks, where its key and
//! URL come from, and which bare model names are its. Resolution (`config::provider`), building
//! it (`provider::build`), the variables kept from tools and redacted (`providers::is_key_var`),
//! the names in errors, and the help's list (checked against this table by a test) all come
//! from here. A new provider that speaks an existing wire API is one entry; a new wire API is
//! one entry and its module under `provider/`. (Data only, in the base layer, so the process
//! code that scrubs tool environments can read it.)

/// Which dialect of the OpenAI APIs a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// api.openai.com: `developer` role, `max_completion_tokens`.
    OpenAi,
    /// A compatible server: `system` role, `max_tokens`.
    Compatible,
}

/// The wire APIs rounds speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages, SSE.
    Anthropic,
    /// OpenAI Chat Completions, SSE (OpenAI and every compatible server).
    Chat,
    /// OpenAI Responses, SSE.
    Responses,
    /// Gemini `streamGenerateContent?alt=sse`.
    Gemini,
    /// Amazon Bedrock's Converse stream (AWS's binary event stream).
    Bedrock,
    /// Google Vertex AI: Gemini's wire for Google's models, Anthropic's for Claude.
    Vertex,
}

impl Wire {
    /// The path a base URL gets for `model` (each SDK's convention: Anthropic's and Gemini's
    /// base URL is `http://host:port`, OpenAI's ends in `/v1`).
    pub fn url(self, base_url: &str, model: &str) -> String {
        let base = base_url.trim_end_matches('/');
        match self {
            Wire::Anthropic => format!("{base}/v1/messages"),
            Wire::Chat => format!("{base}/chat/completions"),
            Wire::Responses => format!("{base}/responses"),
            Wire::Gemini => format!("{base}/v1beta/models/{model}:streamGenerateContent?alt=sse"),
            // The cloud's own module makes the path from the region, project and model.
            Wire::Bedrock | Wire::Vertex => base.to_owned(),
        }
    }

    /// The API's name, as `rounds models` and `doctor` show it.
    pub fn name(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic-messages",
            Wire::Chat => "openai-chat",
            Wire::Responses => "openai-responses",
            Wire::Gemini => "gemini",
            Wire::Bedrock => "bedrock-converse",
            Wire::Vertex => "vertex",
        }
    }

    /// Whether `--api` may move this wire to the other OpenAI one.
    pub fn is_openai(self) -> bool {
        matches!(self, Wire::Chat | Wire::Responses)
    }
}

/// How a provider's requests prove who sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// The key in `key_var`, as a header.
    Key,
    /// SigV4 from the AWS credential chain, or a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`).
    Aws,
    /// Google's Application Default Credentials.
    Google,
    /// An `api-key` header, or a Microsoft Entra ID bearer token.
    Azure,
}

impl Auth {
    /// The credentials a provider of this kind takes, as `rounds models` lists them; `None`
    /// for a plain key (its variable says it all).
    pub fn describe(self) -> Option<&'static str> {
        match self {
            Auth::Key => None,
            Auth::Aws => Some("the AWS credential chain, or AWS_BEARER_TOKEN_BEDROCK"),
            Auth::Google => Some("Application Default Credentials"),
            Auth::Azure => Some("AZURE_OPENAI_API_KEY, or an Entra ID token"),
        }
    }
}

/// One built-in provider.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    /// As in `-m NAME/MODEL`.
    pub name: &'static str,
    pub wire: Wire,
    /// For the OpenAI wires: OpenAI itself, or a compatible server.
    pub flavor: Flavor,
    /// The variable holding the key (also read from `{VAR}_FILE`).
    pub key_var: &'static str,
    /// Whether a run needs a key (local servers take one only if they were set up with one;
    /// the clouds have credentials of their own).
    pub key_required: bool,
    pub auth: Auth,
    /// A server on the user's own machine: a small model, which gets an output cap by default
    /// and whose tool calls written as text are read (`provider/text_calls.rs`).
    pub local: bool,
    /// Other variables that hold this provider's keys: never passed to a tool either.
    pub(crate) also_secret: &'static [&'static str],
    /// The variables that override the URL, the first set one winning (`--base-url` overrides
    /// them all).
    pub url_vars: &'static [&'static str],
    /// Empty for a cloud whose URL is made from its region or project.
    pub default_url: &'static str,
    /// Bare model names that are this provider's (`claude-…` is Anthropic's).
    pub bare_prefixes: &'static [&'static str],
    /// Headers every request carries (OpenRouter's attribution of the app).
    pub headers: &'static [(&'static str, &'static str)],
}

/// The built-in providers.
pub const PROVIDERS: &[Entry] = &[
    Entry {
        name: "anthropic",
        wire: Wire::Anthropic,
        flavor: Flavor::OpenAi,
        key_var: "ANTHROPIC_API_KEY",
        key_required: true,
        auth: Auth::Key,
        local: false,
        also_secret: &[],
        url_vars: &["ANTHROPIC_BASE_URL"],
        default_url: "https://api.anthropic.com",
        bare_prefixes: &["claude-"],
        headers: &[],
    },
    Entry {
        name: "openai",
        wire: Wire::Chat,
        flavor: Flavor::OpenAi,
        key_var: "OPENAI_API_KEY",
        key_required: true,
        auth: Auth::Key,
        local: false,
        also_secret: &[],
        url_vars: &["OPENAI_BASE_URL"],
        default_url: "https://api.openai.com/v1",
        bare_prefixes: &["gpt-", "chatgpt-", "o1", "o3", "o4"],
        headers: &[],
    },
    Entry {
        name: "openai-responses",
        wire: Wire::Responses,
        flavor: Flavor::OpenAi,
        key_var: "OPENAI_API_KEY",
        key_required: true,
        auth: Auth::Key,
        local: false,
        also_secret: &[],
        url_vars: &["OPENAI_BASE_URL"],
        default_url: "https://api.openai.com/v1",
        bare_prefixes: &[],
        headers: &[],
    },
    Entry {
        name: "gemini",
        wire: Wire::Gemini,
        flavor: Flavor::OpenAi,
        key_var: "GEMINI_API_KEY",
        key_required: true,
        auth: Auth::Key,
        local: false,
        also_secret: &["GOOGLE_API_KEY"],
        url_vars: &["GEMINI_BASE_URL"],
        default_url: "https://generativelanguage.googleapis.com",
        bare_prefixes: &["gemini-"],
        headers: &[],
    },
    Entry {
        name: "bedrock",
        wire: Wire::Bedrock,
        flavor: Flavor::OpenAi,
        // A Bedrock API key; without one, SigV4 from the AWS credential chain.
        key_var: "AWS_BEARER_TOKEN_BEDROCK",
        key_required: false,
        auth: Auth::Aws,
        local: false,
        also_secret: &[
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_CONTAINER_AUTHORIZATION_TOKEN",
            // Files holding credentials: a tool is not handed where they are.
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            "AWS_SHARED_CREDENTIALS_FILE",
        ],
        url_vars: &["AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"],
        default_url: "",
        bare_prefixes: &[],
        headers: &[],
    },
    Entry {
        name: "vertex",
        wire: Wire::Vertex,
        flavor: Flavor::OpenAi,
        // Vertex takes no key: Application Default Credentials (the file this names, or the
        // metadata server).
        key_var: "GOOGLE_APPLICATION_CREDENTIALS",
        key_required: false,
        auth: Auth::Google,
        local: false,
        // Where google-github-actions/auth says it wrote the credentials file.
        also_secret: &[
            "GOOGLE_GHA_CREDS_PATH",
            "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE",
        ],
        url_vars: &[],
        default_url: "",
        bare_prefixes: &[],
        headers: &[],
    },
    Entry {
        name: "azure",
        wire: Wire::Chat,
        flavor: Flavor::OpenAi,
        // An `api-key`; without one, a Microsoft Entra ID token.
        key_var: "AZURE_OPENAI_API_KEY",
        key_required: false,
        auth: Auth::Azure,
        local: false,
        also_secret: &[
            "AZURE_OPENAI_AD_TOKEN",
            "AZURE_CLIENT_SECRET",
            "AZURE_FEDERATED_TOKEN_FILE",
        ],
        url_vars: &["AZURE_OPENAI_ENDPOINT"],
        default_url: "",
        bare_prefixes: &[],
        headers: &[],
    },
    Entry {
        name: "openrouter",
        wire: Wire::Chat,
        flavor: Flavor::Compatible,
        key_var: "OPENROUTER_API_KEY",
        key_required: true,
        auth: Auth::Key,
        local: false,
        also_secret: &[],
        url_vars: &["OPENROUTER_BASE_URL"],
        default_url: "https://openrouter.ai/api/v1",
        bare_prefixes: &[],
        // OpenRouter's attribution: the app's name on its activity pages. (No `HTTP-Referer`:
        // rounds has no site of its own to name.)
        headers: &[("x-title", "rounds")],
    },
    local("ollama", "OLLAMA_API_KEY", "http://127.0.0.1:11434/v1"),
    local("llamacpp", "LLAMACPP_API_KEY", "http://127.0.0.1:8080/v1"),
    local("vllm", "VLLM_API_KEY", "http://127.0.0.1:8000/v1"),
];

/// An OpenAI-compatible local server: Chat Completions, a key only if it was set up with one.
const fn local(name: &'static str, key_var: &'static str, default_url: &'static str) -> Entry {
    Entry {
        name,
        wire: Wire::Chat,
        flavor: Flavor::Compatible,
        key_var,
        key_required: false,
        auth: Auth::Key,
        local: true,
        also_secret: &[],
        url_vars: &[],
        default_url,
        bare_prefixes: &[],
        headers: &[],
    }
}

/// The entry named `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    PROVIDERS.iter().find(|e| e.name == name)
}

/// The entry a bare model name belongs to.
pub fn for_bare(model: &str) -> Option<&'static Entry> {
    PROVIDERS
        .iter()
        .find(|e| e.bare_prefixes.iter().any(|p| model.starts_with(p)))
}

/// A CI runner's variables that buy cloud credentials: with GitHub's, anyone can ask for an
/// OIDC token and exchange it for the workflow's cloud role.
const RUNNER_SECRETS: &[&str] = &[
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
];

/// Where OpenTelemetry's exporter reads the headers it sends (credentials, as a rule: a
/// Honeycomb team key, a bearer token): kept from tools and redacted, each header's value too.
const HEADER_VARS: &[&str] = &[
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
];

/// Whether `name` is one of the exporter's header variables ([`HEADER_VARS`]).
pub fn is_header_var(name: &str) -> bool {
    HEADER_VARS.contains(&name)
}

/// The model a run uses when none is given.
pub const DEFAULT_MODEL: &str = "anthropic/claude-sonnet-4-5";

/// The provider a model spec (already un-aliased) names, without reading anything: `"replay"`
/// for `replay:FILE`, `None` when it names none.
pub fn provider_of(spec: &str) -> Option<&str> {
    if spec.starts_with("replay:") {
        return Some("replay");
    }
    match spec.split_once('/') {
        Some((p, m)) if !m.is_empty() => Some(p),
        Some(_) => None,
        None => for_bare(spec).map(|e| e.name),
    }
}

/// Every variable that holds a provider's key or credentials, or says where they are.
pub(crate) fn key_vars() -> impl Iterator<Item = &'static str> {
    PROVIDERS
        .iter()
        .flat_map(|e| std::iter::once(e.key_var).chain(e.also_secret.iter().copied()))
        .chain(RUNNER_SECRETS.iter().copied())
        .chain(HEADER_VARS.iter().copied())
}

/// Whether `name` is a variable that holds a provider's key ([`key_vars`]): never passed to a
/// tool, whatever the flags say, and redacted before any other variable.
pub fn is_key_var(name: &str) -> bool {
    key_vars().any(|v| v == name)
}

/// Whose signatures (thinking, thought signatures) a response of `provider`'s `model` carries:
/// a history's turns are tagged with it, and a provider sends a turn's signatures back only to
/// itself. Vertex AI serves two families whose signatures are not each other's.
pub fn signer(provider: &str, model: &str) -> String {
    match provider {
        "vertex" if model.starts_with("claude") => "vertex/claude".into(),
        "vertex" => "vertex/gemini".into(),
        other => other.into(),
    }
}

/// The names, as errors and help list them.
pub fn names() -> Vec<&'static str> {
    PROVIDERS.iter().map(|e| e.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_bare_names_find_their_provider() {
        let mut names = names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PROVIDERS.len());
        assert_eq!(
            for_bare("claude-haiku-4-5").map(|e| e.name),
            Some("anthropic")
        );
        assert_eq!(for_bare("o3-mini").map(|e| e.name), Some("openai"));
        assert_eq!(for_bare("gemini-2.5-flash").map(|e| e.name), Some("gemini"));
        assert_eq!(for_bare("qwen3"), None);
        assert_eq!(
            Wire::Gemini.url("http://h:1/", "m"),
            "http://h:1/v1beta/models/m:streamGenerateContent?alt=sse"
        );
    }

    #[test]
    fn every_key_variable_is_scrubbed_from_tools() {
        for var in key_vars() {
            assert!(crate::providers::is_key_var(var), "{var}");
        }
        // The clouds' credentials, by name: a table entry losing one fails here.
        for var in [
            "AWS_BEARER_TOKEN_BEDROCK",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_CONTAINER_AUTHORIZATION_TOKEN",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "GOOGLE_GHA_CREDS_PATH",
            "AZURE_OPENAI_API_KEY",
            "AZURE_OPENAI_AD_TOKEN",
            "AZURE_CLIENT_SECRET",
            "AZURE_FEDERATED_TOKEN_FILE",
            "OPENROUTER_API_KEY",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        ] {
            assert!(crate::providers::is_key_var(var), "{var}");
        }
        assert!(!crate::providers::is_key_var("PATH"));
        assert!(!crate::providers::is_key_var("AWS_REGION"));
    }
}
