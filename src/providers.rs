//! Every built-in provider, one entry each: its name, the wire API it speaks, where its key and
//! URL come from, and which bare model names are its. Resolution (`config::provider`), building
//! it (`provider::build`), the variables kept from tools and redacted (`process::is_key_var`),
//! the names in errors, and the help's list (checked against this table by a test) all come
//! from here. A new provider that speaks an existing wire API is one entry; a new wire API is
//! one entry and its module under `provider/`. (Data only, in the base layer, so the process
//! code that scrubs tool environments can read it.)

/// Which dialect of the OpenAI APIs a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// api.openai.com: `developer` role, `max_completion_tokens`.
    OpenAi,
    /// A compatible server: `system` role, `max_tokens`.
    Compatible,
}

/// The wire APIs rounds speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// Anthropic Messages, SSE.
    Anthropic,
    /// OpenAI Chat Completions, SSE (OpenAI and every compatible server).
    Chat,
    /// OpenAI Responses, SSE.
    Responses,
    /// Gemini `streamGenerateContent?alt=sse`.
    Gemini,
}

impl Wire {
    /// The path a base URL gets for `model` (each SDK's convention: Anthropic's and Gemini's
    /// base URL is `http://host:port`, OpenAI's ends in `/v1`).
    pub(crate) fn url(self, base_url: &str, model: &str) -> String {
        let base = base_url.trim_end_matches('/');
        match self {
            Wire::Anthropic => format!("{base}/v1/messages"),
            Wire::Chat => format!("{base}/chat/completions"),
            Wire::Responses => format!("{base}/responses"),
            Wire::Gemini => format!("{base}/v1beta/models/{model}:streamGenerateContent?alt=sse"),
        }
    }

    /// The API's name, as `rounds models` and `doctor` show it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic-messages",
            Wire::Chat => "openai-chat",
            Wire::Responses => "openai-responses",
            Wire::Gemini => "gemini",
        }
    }

    /// Whether `--api` may move this wire to the other OpenAI one.
    pub(crate) fn is_openai(self) -> bool {
        matches!(self, Wire::Chat | Wire::Responses)
    }
}

/// One built-in provider.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// As in `-m NAME/MODEL`.
    pub(crate) name: &'static str,
    pub(crate) wire: Wire,
    /// For the OpenAI wires: OpenAI itself, or a compatible server.
    pub(crate) flavor: Flavor,
    /// The variable holding the key (also read from `{VAR}_FILE`).
    pub(crate) key_var: &'static str,
    /// Whether a run needs a key (local servers take one only if they were set up with one).
    pub(crate) key_required: bool,
    /// Other variables that hold this provider's keys: never passed to a tool either.
    pub(crate) also_secret: &'static [&'static str],
    /// The variable that overrides the URL (`--base-url` overrides both).
    pub(crate) url_var: Option<&'static str>,
    pub(crate) default_url: &'static str,
    /// Bare model names that are this provider's (`claude-…` is Anthropic's).
    pub(crate) bare_prefixes: &'static [&'static str],
}

/// The built-in providers.
pub(crate) const PROVIDERS: &[Entry] = &[
    Entry {
        name: "anthropic",
        wire: Wire::Anthropic,
        flavor: Flavor::OpenAi,
        key_var: "ANTHROPIC_API_KEY",
        key_required: true,
        also_secret: &[],
        url_var: Some("ANTHROPIC_BASE_URL"),
        default_url: "https://api.anthropic.com",
        bare_prefixes: &["claude-"],
    },
    Entry {
        name: "openai",
        wire: Wire::Chat,
        flavor: Flavor::OpenAi,
        key_var: "OPENAI_API_KEY",
        key_required: true,
        also_secret: &[],
        url_var: Some("OPENAI_BASE_URL"),
        default_url: "https://api.openai.com/v1",
        bare_prefixes: &["gpt-", "chatgpt-", "o1", "o3", "o4"],
    },
    Entry {
        name: "openai-responses",
        wire: Wire::Responses,
        flavor: Flavor::OpenAi,
        key_var: "OPENAI_API_KEY",
        key_required: true,
        also_secret: &[],
        url_var: Some("OPENAI_BASE_URL"),
        default_url: "https://api.openai.com/v1",
        bare_prefixes: &[],
    },
    Entry {
        name: "gemini",
        wire: Wire::Gemini,
        flavor: Flavor::OpenAi,
        key_var: "GEMINI_API_KEY",
        key_required: true,
        also_secret: &["GOOGLE_API_KEY"],
        url_var: Some("GEMINI_BASE_URL"),
        default_url: "https://generativelanguage.googleapis.com",
        bare_prefixes: &["gemini-"],
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
        also_secret: &[],
        url_var: None,
        default_url,
        bare_prefixes: &[],
    }
}

/// The entry named `name`.
pub(crate) fn find(name: &str) -> Option<&'static Entry> {
    PROVIDERS.iter().find(|e| e.name == name)
}

/// The entry a bare model name belongs to.
pub(crate) fn for_bare(model: &str) -> Option<&'static Entry> {
    PROVIDERS
        .iter()
        .find(|e| e.bare_prefixes.iter().any(|p| model.starts_with(p)))
}

/// Every variable that holds a provider's key.
pub(crate) fn key_vars() -> impl Iterator<Item = &'static str> {
    PROVIDERS
        .iter()
        .flat_map(|e| std::iter::once(e.key_var).chain(e.also_secret.iter().copied()))
}

/// The names, as errors and help list them.
pub(crate) fn names() -> Vec<&'static str> {
    PROVIDERS.iter().map(|e| e.name).collect()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

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
    fn the_help_names_every_provider_and_its_key() {
        let command = crate::cli::Cli::command();
        let model = command
            .get_arguments()
            .find(|a| a.get_id() == "model")
            .and_then(|a| a.get_long_help().or(a.get_help()).map(ToString::to_string))
            .unwrap_or_default();
        let mut after = String::new();
        if let Some(text) = command.get_after_long_help() {
            after = text.to_string();
        }
        for entry in PROVIDERS {
            assert!(model.contains(entry.name), "-m's help lacks {}", entry.name);
            if entry.key_required {
                assert!(
                    after.contains(entry.key_var),
                    "--help lacks {}",
                    entry.key_var
                );
            }
        }
    }

    #[test]
    fn every_key_variable_is_scrubbed_from_tools() {
        for var in key_vars() {
            assert!(crate::process::is_key_var(var), "{var}");
        }
        assert!(!crate::process::is_key_var("PATH"));
    }
}
