//! Azure OpenAI: OpenAI's own wire APIs (Chat Completions, Responses) at a resource's endpoint,
//! with Azure's URLs and credentials. The model a run names is the deployment.
//!
//! - URLs: the v1 API (`{endpoint}/openai/v1/chat/completions`, `…/responses`), or with
//!   `--api-version` the older deployment URLs (`{endpoint}/openai/deployments/{deployment}/
//!   chat/completions?api-version=…`).
//! - Credentials, the first that is there: the key (`AZURE_OPENAI_API_KEY`, its `_FILE`,
//!   `--api-key-file`) as an `api-key` header; a Microsoft Entra ID token the user fetched
//!   (`AZURE_OPENAI_AD_TOKEN`); or one rounds fetches for a service principal
//!   (`AZURE_CLIENT_ID` and `AZURE_TENANT_ID`, with a federated token file, as workload identity
//!   and GitHub's OIDC give, or a client secret), refreshed before it expires.
//!
//! The token exchange is one form POST (OAuth 2.0 client credentials, no cryptography of ours):
//! `azure_identity` would do it with a second HTTP stack and a second major version of reqwest.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::header::HeaderValue;

use super::auth::Credentials;
use super::choice::{BuildError, Cloud};
use super::endpoint::Endpoint;
use super::{Failure, ProviderError, http};
use crate::providers::Wire;

/// The scope of a token for Azure OpenAI (Azure AI Foundry's resources take the same).
const SCOPE: &str = "https://cognitiveservices.azure.com/.default";
/// Where Entra ID issues tokens, unless `AZURE_AUTHORITY_HOST` names another cloud's.
const AUTHORITY: &str = "https://login.microsoftonline.com/";
/// A token is fetched again this long before it expires, so no request carries one that
/// expires on the way.
const EARLY: Duration = Duration::from_secs(300);

/// Points `endpoint` at the resource's URL for `wire` and gives it its credentials.
pub(crate) fn prepare(
    endpoint: &mut Endpoint,
    wire: Wire,
    base: &str,
    cloud: &Cloud,
) -> Result<(), BuildError> {
    let env = |name: &str| crate::env::var(name);
    endpoint.url = url(base, wire, &endpoint.model, cloud.api_version.as_deref())?;
    let client = endpoint.client.clone();
    endpoint.credentials = Some(credentials(endpoint.key.take(), &env, client)?);
    Ok(())
}

/// The URL of `wire` for `deployment` at the resource `base` (its endpoint, with or without
/// the `/openai` or `/openai/v1` path its portal page shows).
pub(crate) fn url(
    base: &str,
    wire: Wire,
    deployment: &str,
    api_version: Option<&str>,
) -> Result<String, BuildError> {
    if base.is_empty() {
        return Err(BuildError::Config(
            "azure needs the resource's endpoint: set AZURE_OPENAI_ENDPOINT \
             (https://NAME.openai.azure.com) or pass --base-url"
                .into(),
        ));
    }
    let root = base.trim_end_matches('/');
    let root = root
        .strip_suffix("/openai/v1")
        .or_else(|| root.strip_suffix("/openai"))
        .unwrap_or(root);
    let path = match wire {
        Wire::Responses => "responses",
        _ => "chat/completions",
    };
    Ok(match (api_version, wire) {
        (None, _) => format!("{root}/openai/v1/{path}"),
        (Some(v), Wire::Responses) => format!("{root}/openai/responses?api-version={}", query(v)),
        (Some(v), _) => format!(
            "{root}/openai/deployments/{}/{path}?api-version={}",
            query(deployment),
            query(v)
        ),
    })
}

fn query(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The first credentials there are, or an error naming every place looked in.
fn credentials(
    key: Option<String>,
    env: &dyn Fn(&str) -> Option<String>,
    client: reqwest::Client,
) -> Result<Arc<dyn Credentials>, BuildError> {
    if let Some(key) = key {
        return Ok(Arc::new(Header::new("api-key", &key)?));
    }
    // Each credential trimmed, and refused here when no request could carry it: sent, it would
    // fail as a transport error, retried as if the network had failed.
    let credential = |name: &str| {
        super::auth::env_credential(env, name)
            .map_err(|e| BuildError::Config(format!("azure: {e}")))
    };
    if let Some(token) = credential("AZURE_OPENAI_AD_TOKEN")? {
        return Ok(Arc::new(Header::new(
            "authorization",
            &format!("Bearer {token}"),
        )?));
    }
    if let (Some(client_id), Some(tenant)) = (
        credential("AZURE_CLIENT_ID")?,
        credential("AZURE_TENANT_ID")?,
    ) {
        let proof = match (
            env("AZURE_FEDERATED_TOKEN_FILE"),
            credential("AZURE_CLIENT_SECRET")?,
        ) {
            (Some(file), _) => Proof::Assertion(file.into()),
            (None, Some(secret)) => Proof::Secret(secret),
            (None, None) => {
                return Err(BuildError::Config(
                    "azure: AZURE_CLIENT_ID and AZURE_TENANT_ID are set, but neither \
                     AZURE_FEDERATED_TOKEN_FILE nor AZURE_CLIENT_SECRET"
                        .into(),
                ));
            }
        };
        let authority = env("AZURE_AUTHORITY_HOST").unwrap_or_else(|| AUTHORITY.to_owned());
        let token_url = format!(
            "{}/{}/oauth2/v2.0/token",
            authority.trim_end_matches('/'),
            query(&tenant)
        );
        // One token for every job of a batch that uses this principal.
        let shared = format!("azure\0{token_url}\0{client_id}\0{}", proof.describe());
        let made = super::auth::shared(&shared, || {
            Ok::<_, BuildError>(Entra::new(token_url, client_id, proof, client))
        })?;
        return Ok(made);
    }
    Err(BuildError::Config(
        "azure: no credentials: tried AZURE_OPENAI_API_KEY (and AZURE_OPENAI_API_KEY_FILE, \
         --api-key-file), AZURE_OPENAI_AD_TOKEN, and AZURE_CLIENT_ID with AZURE_TENANT_ID \
         (and AZURE_FEDERATED_TOKEN_FILE or AZURE_CLIENT_SECRET)"
            .into(),
    ))
}

/// Which credentials `describe` would pick, for `rounds doctor`: names only, never a value.
/// A credential no request could carry is a line starting "none usable", which doctor fails.
pub(crate) fn describe_credentials(env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let keyless =
        env("AZURE_OPENAI_API_KEY").is_none() && env("AZURE_OPENAI_API_KEY_FILE").is_none();
    let used = [
        "AZURE_OPENAI_AD_TOKEN",
        "AZURE_CLIENT_ID",
        "AZURE_TENANT_ID",
        "AZURE_CLIENT_SECRET",
    ];
    for name in used.into_iter().filter(|_| keyless) {
        if let Err(why) = super::auth::env_credential(env, name) {
            return vec![format!("none usable: {why}")];
        }
    }
    let line = if env("AZURE_OPENAI_API_KEY").is_some() {
        "api-key header from AZURE_OPENAI_API_KEY".to_owned()
    } else if env("AZURE_OPENAI_API_KEY_FILE").is_some() {
        "api-key header from the file AZURE_OPENAI_API_KEY_FILE names".to_owned()
    } else if env("AZURE_OPENAI_AD_TOKEN").is_some() {
        "Entra ID token from AZURE_OPENAI_AD_TOKEN".to_owned()
    } else if env("AZURE_CLIENT_ID").is_some() && env("AZURE_TENANT_ID").is_some() {
        match (
            env("AZURE_FEDERATED_TOKEN_FILE"),
            env("AZURE_CLIENT_SECRET").is_some(),
        ) {
            (Some(file), _) => format!(
                "Entra ID token for AZURE_CLIENT_ID, exchanged for the federated token in {file}"
            ),
            (None, true) => "Entra ID token for AZURE_CLIENT_ID, with AZURE_CLIENT_SECRET".into(),
            (None, false) => "none: AZURE_CLIENT_ID is set without AZURE_FEDERATED_TOKEN_FILE or \
                 AZURE_CLIENT_SECRET"
                .into(),
        }
    } else {
        "none found (AZURE_OPENAI_API_KEY, AZURE_OPENAI_AD_TOKEN, AZURE_CLIENT_ID + \
         AZURE_TENANT_ID)"
            .into()
    };
    vec![line]
}

/// A fixed header: the key, or a token the user fetched.
struct Header {
    name: &'static str,
    value: HeaderValue,
}

impl Header {
    fn new(name: &'static str, value: &str) -> Result<Header, BuildError> {
        let value = http::secret_header("azure", name, value)
            .map_err(|_| BuildError::Config("azure: the key or token cannot be a header".into()))?;
        Ok(Header { name, value })
    }
}

#[async_trait]
impl Credentials for Header {
    async fn authorize(&self, request: &mut reqwest::Request) -> Result<(), ProviderError> {
        request.headers_mut().insert(self.name, self.value.clone());
        Ok(())
    }
}

/// How a service principal proves itself to Entra ID.
enum Proof {
    /// A federated token (workload identity, GitHub's OIDC), read again at each exchange:
    /// the file is rotated under a long run.
    Assertion(std::path::PathBuf),
    Secret(String),
}

impl Proof {
    /// What tells one proof from another, for sharing tokens: the file, or the secret itself
    /// (kept in memory only, as the proof is).
    fn describe(&self) -> String {
        match self {
            Proof::Assertion(path) => format!("file:{}", path.display()),
            Proof::Secret(secret) => format!("secret:{secret}"),
        }
    }
}

/// Tokens fetched from Entra ID for a service principal, kept until shortly before they expire.
struct Entra {
    token_url: String,
    client_id: String,
    proof: Proof,
    client: reqwest::Client,
    cached: tokio::sync::Mutex<Option<(HeaderValue, Instant)>>,
}

impl Entra {
    fn new(token_url: String, client_id: String, proof: Proof, client: reqwest::Client) -> Entra {
        Entra {
            token_url,
            client_id,
            proof,
            client,
            cached: tokio::sync::Mutex::new(None),
        }
    }

    fn fail(&self, kind: Failure, message: String) -> ProviderError {
        ProviderError::Credentials {
            provider: "azure".into(),
            message,
            kind,
        }
    }

    /// One exchange: the form Entra ID's token endpoint takes, the token and its lifetime back.
    async fn fetch(&self) -> Result<(HeaderValue, Instant), ProviderError> {
        let mut form = vec![
            ("grant_type", "client_credentials".to_owned()),
            ("client_id", self.client_id.clone()),
            ("scope", SCOPE.to_owned()),
        ];
        match &self.proof {
            Proof::Assertion(path) => {
                let token = std::fs::read_to_string(path).map_err(|e| {
                    let shown = path.display();
                    self.fail(
                        Failure::Config,
                        format!("cannot read AZURE_FEDERATED_TOKEN_FILE {shown}: {e}"),
                    )
                })?;
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                form.push(("client_assertion", token.trim().to_owned()));
            }
            Proof::Secret(secret) => form.push(("client_secret", secret.clone())),
        }
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let response = self
            .client
            .post(&self.token_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                // A request reqwest would not build (an authority host that is no URL) is
                // the setup's to fix; only a failure on the way is the network's.
                let kind = if e.is_builder() {
                    Failure::Config
                } else {
                    Failure::Network
                };
                let why = crate::net::describe(&e);
                self.fail(kind, format!("Entra ID token endpoint: {why}"))
            })?;
        let status = response.status();
        let bytes = http::token_body(response, TOKEN_IDLE)
            .await
            .map_err(|e| self.fail(e.kind(), format!("Entra ID token endpoint: {e}")))?;
        let reply: TokenReply = serde_json::from_slice(&bytes).unwrap_or_default();
        let Some(token) = reply.access_token.filter(|_| status.is_success()) else {
            let kind = if status.is_server_error() {
                Failure::Network
            } else {
                Failure::Auth
            };
            let why = reply.error_description.or(reply.error).unwrap_or_default();
            return Err(self.fail(
                kind,
                format!(
                    "Entra ID refused the token request (HTTP {status}): {}",
                    crate::net::clip(&why, 300)
                ),
            ));
        };
        // A token no header can carry is the token service's fault: refused like a wrong one.
        let value = http::secret_header("azure", "the Entra ID token", &format!("Bearer {token}"))
            .map_err(|_| {
                let why = "Entra ID sent a token that cannot be sent in an HTTP header";
                self.fail(Failure::Auth, why.to_owned())
            })?;
        let lifetime = Duration::from_secs(reply.expires_in.unwrap_or(3600));
        Ok((value, Instant::now() + lifetime.saturating_sub(EARLY)))
    }
}

/// How long a token endpoint's answer may go without a byte. The whole fetch is also inside
/// the request's wait (`http::send`), which is usually shorter.
const TOKEN_IDLE: Duration = Duration::from_secs(30);

#[derive(serde::Deserialize, Default)]
struct TokenReply {
    access_token: Option<String>,
    expires_in: Option<u64>,
    error: Option<String>,
    error_description: Option<String>,
}

#[async_trait]
impl Credentials for Entra {
    async fn authorize(&self, request: &mut reqwest::Request) -> Result<(), ProviderError> {
        let mut cached = self.cached.lock().await;
        let token = match &*cached {
            Some((token, until)) if Instant::now() < *until => token.clone(),
            _ => {
                let (token, until) = self.fetch().await?;
                *cached = Some((token.clone(), until));
                token
            }
        };
        request.headers_mut().insert("authorization", token);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v1_api_and_the_deployment_urls() {
        let v1 = |base| url(base, Wire::Chat, "dep", None).unwrap();
        for base in [
            "https://r.openai.azure.com",
            "https://r.openai.azure.com/",
            "https://r.openai.azure.com/openai",
            "https://r.openai.azure.com/openai/v1/",
        ] {
            assert_eq!(
                v1(base),
                "https://r.openai.azure.com/openai/v1/chat/completions"
            );
        }
        assert_eq!(
            url("https://r.openai.azure.com", Wire::Responses, "dep", None).unwrap(),
            "https://r.openai.azure.com/openai/v1/responses"
        );
        assert_eq!(
            url("http://h:1", Wire::Chat, "my dep", Some("2024-10-21")).unwrap(),
            "http://h:1/openai/deployments/my+dep/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            url(
                "http://h:1",
                Wire::Responses,
                "d",
                Some("2025-04-01-preview")
            )
            .unwrap(),
            "http://h:1/openai/responses?api-version=2025-04-01-preview"
        );
        let missing = url("", Wire::Chat, "d", None).unwrap_err().to_string();
        assert!(missing.contains("AZURE_OPENAI_ENDPOINT"), "{missing}");
    }

    #[test]
    fn credentials_are_the_first_there_is_and_none_names_every_place() {
        // rounds' client: it installs the crypto provider reqwest is built without.
        let client = || http::client().unwrap();
        let none = |_: &str| None;
        let err = credentials(None, &none, client())
            .err()
            .map(|e| e.to_string());
        let err = err.unwrap_or_default();
        for var in [
            "AZURE_OPENAI_API_KEY",
            "AZURE_OPENAI_AD_TOKEN",
            "AZURE_CLIENT_ID",
        ] {
            assert!(err.contains(var), "{err}");
        }
        let half = |v: &str| (v == "AZURE_CLIENT_ID" || v == "AZURE_TENANT_ID").then(|| "x".into());
        let err = credentials(None, &half, client())
            .err()
            .map(|e| e.to_string());
        assert!(
            err.unwrap_or_default()
                .contains("AZURE_FEDERATED_TOKEN_FILE")
        );
        assert!(credentials(Some("k".into()), &none, client()).is_ok());
        let described = describe_credentials(&|v: &str| {
            (v == "AZURE_OPENAI_AD_TOKEN").then(|| "secret-token".into())
        });
        assert!(!described[0].contains("secret-token"));
        assert!(described[0].contains("AZURE_OPENAI_AD_TOKEN"));
    }

    #[test]
    fn a_token_or_secret_no_request_can_carry_is_a_setup_error_naming_its_variable() {
        let client = || http::client().unwrap();
        for var in ["AZURE_OPENAI_AD_TOKEN", "AZURE_CLIENT_SECRET"] {
            let env = |v: &str| match v {
                "AZURE_CLIENT_ID" | "AZURE_TENANT_ID" => Some("x".into()),
                v if v == var => Some("tok\nen-value".into()),
                _ => None,
            };
            let err = credentials(None, &env, client()).err();
            assert!(matches!(err, Some(BuildError::Config(_))), "{var}");
            let err = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(var) && !err.contains("en-value"), "{err}");
            let described = describe_credentials(&env).join("; ");
            assert!(described.starts_with("none usable") && described.contains(var));
        }
        // Trimmed, a pasted token's newline is no error.
        let env = |v: &str| (v == "AZURE_OPENAI_AD_TOKEN").then(|| "token\n".into());
        assert!(credentials(None, &env, client()).is_ok());
    }
}
