//! Application Default Credentials, found the way Google's SDKs find them: the file that
//! `GOOGLE_APPLICATION_CREDENTIALS` names, else gcloud's ADC file
//! (`$CLOUDSDK_CONFIG` or `~/.config/gcloud`, `application_default_credentials.json`), else the
//! metadata server (`GCE_METADATA_HOST` overrides its address). A file holds a service-account
//! key (`service_account`: see `service_account.rs`), a user's refresh token
//! (`authorized_user`), workload identity federation (`external_account`: a subject token from a
//! file or URL, such as GitHub's OIDC token, exchanged at its STS `token_url` and optionally
//! for a service account's token) or an `impersonated_service_account`; all but the first are
//! google-cloud-auth's, which caches their tokens and refreshes them ahead of expiry.
//!
//! Files are read when the provider is built, so a missing or malformed one stops the run
//! before any request; tokens are fetched at the first request. The metadata server is asked
//! once, briefly, before it is relied on: off Google Cloud nothing answers, and the run must
//! end with an error naming what was tried rather than hang or retry.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use google_cloud_auth::credentials::{self as gca, CacheableResource};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use super::service_account::ServiceAccount;
use crate::auth::Credentials;
use crate::{Failure, ProviderError};

/// The one scope Vertex AI needs.
pub(crate) const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// The variable naming a credentials file.
pub(crate) const FILE_VAR: &str = "GOOGLE_APPLICATION_CREDENTIALS";
/// The variable overriding the metadata server's host (and port).
pub(crate) const METADATA_VAR: &str = "GCE_METADATA_HOST";
const METADATA_HOST: &str = "metadata.google.internal";
/// How long the metadata server has to answer its first question.
const METADATA_PROBE: Duration = Duration::from_secs(3);

/// Why no token could be had. Messages name the file, variable or server, never a secret.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub(crate) struct AuthError {
    pub(crate) message: String,
    pub(crate) kind: Failure,
}

impl AuthError {
    /// Nothing usable was found, or it is malformed: the user must fix the setup.
    pub(crate) fn config(message: impl Into<String>) -> AuthError {
        AuthError {
            message: message.into(),
            kind: Failure::Config,
        }
    }

    /// The token endpoint refused the credentials.
    pub(crate) fn auth(message: impl Into<String>) -> AuthError {
        AuthError {
            message: message.into(),
            kind: Failure::Auth,
        }
    }

    /// The token endpoint could not be reached or failed itself: worth another try.
    pub(crate) fn network(message: impl Into<String>) -> AuthError {
        AuthError {
            message: message.into(),
            kind: Failure::Network,
        }
    }

    /// A token endpoint's refusal, with its own error text (OAuth error bodies carry no token).
    pub(crate) fn of_status(status: u16, what: &str, body: &str) -> AuthError {
        let message = format!(
            "vertex: {what}: HTTP {status} {}",
            crate::net::clip(body.trim(), 300)
        );
        if status >= 500 || status == 429 {
            AuthError::network(message)
        } else {
            AuthError::auth(message)
        }
    }

    pub(crate) fn into_provider(self) -> ProviderError {
        ProviderError::Credentials {
            provider: super::NAME.into(),
            message: self.message,
            kind: self.kind,
        }
    }
}

/// Where the credentials were found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The file `GOOGLE_APPLICATION_CREDENTIALS` names.
    Variable(PathBuf),
    /// gcloud's ADC file.
    Gcloud(PathBuf),
    /// The metadata server at this host; `named` when `GCE_METADATA_HOST` gave it.
    Metadata { host: String, named: bool },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Variable(path) => write!(f, "{FILE_VAR}={}", path.display()),
            Origin::Gcloud(path) => write!(f, "gcloud's ADC file {}", path.display()),
            Origin::Metadata { host, named: true } => {
                write!(f, "the metadata server {METADATA_VAR}={host}")
            }
            Origin::Metadata { host, .. } => write!(f, "the metadata server {host}"),
        }
    }
}

/// What the credentials are.
enum Kind {
    ServiceAccount(Box<ServiceAccount>),
    /// google-cloud-auth's kinds: the file's `type` and its whole content.
    Library(String, Value),
    Metadata,
}

/// A run's Google identity.
pub(crate) struct GoogleAuth {
    origin: Origin,
    kind: Kind,
    /// The providers' client, for the token endpoints too.
    client: reqwest::Client,
    /// google-cloud-auth's credentials (they hold the token cache), made at the first request:
    /// they start a refresh task, which needs the runtime.
    library: tokio::sync::OnceCell<gca::Credentials>,
}

/// gcloud's ADC file under `$CLOUDSDK_CONFIG`, else `~/.config/gcloud`.
pub(crate) fn gcloud_file(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let dir = match env("CLOUDSDK_CONFIG") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env("HOME")?).join(".config/gcloud"),
    };
    Some(dir.join("application_default_credentials.json"))
}

/// Where the chain would look, in order, and what it would use: the first file that exists,
/// else the metadata server.
pub(crate) fn origin(env: &dyn Fn(&str) -> Option<String>) -> Origin {
    if let Some(path) = env(FILE_VAR) {
        return Origin::Variable(PathBuf::from(path));
    }
    if let Some(path) = gcloud_file(env).filter(|p| p.is_file()) {
        return Origin::Gcloud(path);
    }
    match env(METADATA_VAR) {
        Some(host) => Origin::Metadata { host, named: true },
        None => Origin::Metadata {
            host: METADATA_HOST.into(),
            named: false,
        },
    }
}

/// A credentials file's JSON and its `type`.
fn read_file(origin: &Origin, path: &PathBuf) -> Result<(String, Value), AuthError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| AuthError::config(format!("vertex: {origin}: cannot read it ({e})")))?;
    // serde_json's syntax errors give a position, never the text.
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| AuthError::config(format!("vertex: {origin}: not JSON ({e})")))?;
    let kind = json
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    Ok((kind, json))
}

impl GoogleAuth {
    /// The credentials the environment names, read and checked (but no token fetched).
    pub(crate) fn locate(
        env: &dyn Fn(&str) -> Option<String>,
        client: reqwest::Client,
    ) -> Result<GoogleAuth, AuthError> {
        let origin = origin(env);
        let kind = match &origin {
            Origin::Variable(path) | Origin::Gcloud(path) => {
                let (kind, json) = read_file(&origin, path)?;
                match kind.as_str() {
                    "service_account" => Kind::ServiceAccount(Box::new(ServiceAccount::parse(
                        json,
                        &origin.to_string(),
                    )?)),
                    "authorized_user" | "external_account" | "impersonated_service_account" => {
                        Kind::Library(kind, json)
                    }
                    other => {
                        return Err(AuthError::config(format!(
                            "vertex: {origin}: credentials of type {other:?} are not supported \
                             (service_account, authorized_user, external_account and \
                             impersonated_service_account are)"
                        )));
                    }
                }
            }
            Origin::Metadata { .. } => Kind::Metadata,
        };
        Ok(GoogleAuth {
            origin,
            kind,
            client,
            library: tokio::sync::OnceCell::new(),
        })
    }

    /// The project a service-account key names, the last place a project is looked for.
    pub(crate) fn file_project(&self) -> Option<&str> {
        match &self.kind {
            Kind::ServiceAccount(sa) => sa.project(),
            _ => None,
        }
    }

    /// The headers that carry the identity: `authorization` (sensitive), and the quota
    /// project's header where the credentials name one.
    pub(crate) async fn headers(&self) -> Result<HeaderMap, AuthError> {
        let client = &self.client;
        if let Kind::ServiceAccount(sa) = &self.kind {
            let mut headers = HeaderMap::new();
            let mut value = HeaderValue::from_str(&sa.bearer(client).await?).map_err(|_| {
                AuthError::auth("vertex: the token endpoint sent an unusable token")
            })?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
            return Ok(headers);
        }
        let credentials = self
            .library
            .get_or_try_init(|| self.library_credentials(client))
            .await?;
        // In a task of its own: google-cloud-auth panics on some answers (an impersonated
        // token whose expiry has already passed, as a skewed clock gives), and a panic there
        // must end this request with an error, not the run.
        let library = credentials.clone();
        let asked = tokio::spawn(async move { library.headers(http::Extensions::new()).await });
        let asked = asked.await.map_err(|e| {
            AuthError::auth(format!(
                "vertex: {}: the credentials library failed ({e})",
                self.origin
            ))
        })?;
        let mut headers = match asked {
            Ok(CacheableResource::New { data, .. }) => data,
            // Only asked for with an entity tag, which is never given.
            Ok(CacheableResource::NotModified) => HeaderMap::new(),
            Err(e) => {
                let message = format!("vertex: {}: {e}", self.origin);
                return Err(if e.is_transient() {
                    AuthError::network(message)
                } else {
                    AuthError::auth(message)
                });
            }
        };
        if let Some(v) = headers.get_mut(reqwest::header::AUTHORIZATION) {
            v.set_sensitive(true);
        }
        Ok(headers)
    }

    /// google-cloud-auth's credentials for a file of theirs, or the metadata server once it
    /// answered.
    async fn library_credentials(
        &self,
        client: &reqwest::Client,
    ) -> Result<gca::Credentials, AuthError> {
        let built = match &self.kind {
            Kind::Library(kind, json) => match kind.as_str() {
                "authorized_user" => gca::user_account::Builder::new(json.clone())
                    .with_scopes([SCOPE])
                    .build(),
                "external_account" => gca::external_account::Builder::new(json.clone())
                    .with_scopes([SCOPE])
                    .build(),
                _ => gca::impersonated::Builder::new(json.clone())
                    .with_scopes([SCOPE])
                    .build(),
            },
            Kind::Metadata => {
                self.probe_metadata(client).await?;
                gca::mds::Builder::default().with_scopes([SCOPE]).build()
            }
            Kind::ServiceAccount(_) => {
                return Err(AuthError::config(
                    "vertex: internal: a key is not a library's",
                ));
            }
        };
        // The builders' messages name fields and types, not values.
        built.map_err(|e| AuthError::config(format!("vertex: {}: {e}", self.origin)))
    }

    /// Asks the metadata server whether it is there, briefly. Not there means no credentials
    /// at all, which is the user's setup to fix (exit 2), not a network fault to retry.
    async fn probe_metadata(&self, client: &reqwest::Client) -> Result<(), AuthError> {
        let Origin::Metadata { host, .. } = &self.origin else {
            return Ok(());
        };
        let url = format!("http://{host}/computeMetadata/v1/");
        let asked = client
            .get(&url)
            .header("metadata-flavor", "Google")
            .timeout(METADATA_PROBE)
            .send()
            .await;
        let why = match asked {
            Ok(r)
                if r.headers()
                    .get("metadata-flavor")
                    .is_some_and(|v| v == "Google") =>
            {
                return Ok(());
            }
            Ok(r) => format!(
                "HTTP {} without Metadata-Flavor: Google",
                r.status().as_u16()
            ),
            Err(e) => crate::net::describe(&e),
        };
        Err(AuthError::config(format!(
            "vertex: no Google credentials found: {FILE_VAR} is not set, gcloud's ADC file \
             (application_default_credentials.json, from `gcloud auth application-default \
             login`) is not there, and {} did not answer ({why})",
            self.origin
        )))
    }
}

#[async_trait]
impl Credentials for GoogleAuth {
    async fn authorize(&self, request: &mut reqwest::Request) -> Result<(), ProviderError> {
        let headers = self.headers().await.map_err(AuthError::into_provider)?;
        request.headers_mut().extend(headers);
        Ok(())
    }
}

/// For `rounds doctor`: which credentials a Vertex run would use and where the project and
/// location would come from, without network and without reading a secret into the text.
pub(crate) fn describe_credentials(env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let origin = origin(env);
    let mut file_project = None;
    // A line starting with "none" is a failed check for doctor.
    let mut lines = vec![match &origin {
        Origin::Variable(path) | Origin::Gcloud(path) => match read_file(&origin, path) {
            Ok((kind, json)) => {
                file_project = json
                    .get("project_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                format!("{} from {origin}", summary(&kind, &json))
            }
            Err(e) => format!("none usable: {}", e.message.trim_start_matches("vertex: ")),
        },
        Origin::Metadata { .. } => {
            format!("{origin} (not probed; no {FILE_VAR}, no gcloud ADC file)")
        }
    }];
    let project = super::PROJECT_VARS
        .iter()
        .find_map(|n| env(n).map(|v| format!("project: {v} (from {n})")))
        .or_else(|| file_project.map(|p| format!("project: {p} (from the key file)")))
        .unwrap_or_else(|| {
            format!(
                "project: none unless --project names one (no {})",
                super::PROJECT_VARS.join(", ")
            )
        });
    let location = super::LOCATION_VARS
        .iter()
        .find_map(|n| env(n).map(|v| format!("location: {v} (from {n})")))
        .unwrap_or_else(|| format!("location: {} (the default)", super::DEFAULT_LOCATION));
    lines.push(project);
    lines.push(location);
    lines
}

/// A file's kind and its non-secret particulars: who, and where tokens come from.
fn summary(kind: &str, json: &Value) -> String {
    let field = |k: &str| {
        json.get(k)
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned()
    };
    match kind {
        "service_account" => format!(
            "service-account key for {} (tokens from {})",
            field("client_email"),
            json.get("token_uri")
                .and_then(Value::as_str)
                .unwrap_or(super::service_account::DEFAULT_TOKEN_URI)
        ),
        "authorized_user" => {
            "a user's refresh token (gcloud auth application-default login)".into()
        }
        "external_account" => {
            let source = &json["credential_source"];
            let from = match (source.get("file"), source.get("url")) {
                (Some(Value::String(f)), _) => format!("subject token from the file {f}"),
                (_, Some(Value::String(u))) => format!("subject token from {u}"),
                _ => "subject token from an executable or cloud".into(),
            };
            let mut s = format!(
                "workload identity federation: {from}, exchanged at {}",
                field("token_url")
            );
            if let Some(Value::String(url)) = json.get("service_account_impersonation_url") {
                let who = url.rsplit('/').next().unwrap_or(url);
                s.push_str(&format!(
                    ", impersonating {}",
                    who.trim_end_matches(":generateAccessToken")
                ));
            }
            s
        }
        "impersonated_service_account" => format!(
            "impersonation via {}",
            field("service_account_impersonation_url")
        ),
        other => format!("type {other:?}, not supported"),
    }
}
