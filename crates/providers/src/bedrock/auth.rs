//! Who a Bedrock request comes from: a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`, sent as a
//! bearer token, nothing signed) or AWS credentials from the standard chain (aws-config's:
//! environment, shared files and profiles, web identity, container, instance metadata),
//! signed with SigV4 (aws-sigv4) over the whole request.
//!
//! The chain is built on the first request, not at setup: building it reads files and may ask
//! the network. Credentials are cached and fetched again a minute before they expire, so a long
//! run outlives the hour a web-identity session lasts. The chain's own requests (STS, the
//! container endpoint, IMDS) go through rounds' HTTP client (`http_client`).

use std::time::{Duration, SystemTime};

use aws_config::Region;
use std::sync::{Arc, Mutex};

use aws_config::imds::credentials::ImdsCredentialsProvider;
use aws_config::meta::credentials::CredentialsProviderChain;
use aws_config::provider_config::ProviderConfig;
use aws_credential_types::Credentials;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, future};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};

use super::http_client::ReqwestHttpClient;
use crate::auth::Credentials as Authorize;
use crate::{Failure, ProviderError, http};

/// The service name requests to bedrock-runtime are signed for.
pub(crate) const SIGNING_NAME: &str = "bedrock";
/// Credentials this close to expiring are fetched again before the next request.
const REFRESH_AHEAD: Duration = Duration::from_secs(60);

/// What the credential chain tries, in order, for the error when none of it works.
pub(crate) const TRIED: &str = "AWS_BEARER_TOKEN_BEDROCK; AWS_ACCESS_KEY_ID and \
AWS_SECRET_ACCESS_KEY; the shared files (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE, \
~/.aws/credentials, ~/.aws/config) for the profile AWS_PROFILE or `default`; web identity \
(AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN); container credentials \
(AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI); the EC2 instance metadata service \
(unless AWS_EC2_METADATA_DISABLED=true)";

/// What to do when no region is found.
pub(crate) const NO_REGION: &str = "no AWS region: pass --region (or set `region` in the \
settings), or set AWS_REGION (or AWS_DEFAULT_REGION), or `region` in the profile of the shared \
config file (AWS_CONFIG_FILE, ~/.aws/config)";

/// Whether a region may still be found without `--region`: in a variable, or in a shared
/// config file (read later, on the first request).
pub(crate) fn region_may_be_found(env: &dyn Fn(&str) -> Option<String>) -> bool {
    let get = |name: &str| env(name).filter(|v| !v.is_empty());
    if get("AWS_REGION").is_some() || get("AWS_DEFAULT_REGION").is_some() {
        return true;
    }
    let config =
        get("AWS_CONFIG_FILE").or_else(|| get("HOME").map(|home| format!("{home}/.aws/config")));
    config.is_some_and(|f| std::path::Path::new(&f).is_file())
}

/// A Bedrock run's identity and region: the API key, or the credential chain signing for the
/// region.
pub(crate) struct AwsAuth {
    provider: String,
    /// A Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK` or `--api-key-file`).
    bearer: Option<String>,
    chain: Chain,
    /// `--region`, when given.
    region_flag: Option<String>,
    region: tokio::sync::OnceCell<Option<String>>,
}

impl AwsAuth {
    pub(crate) fn new(
        provider: &str,
        client: reqwest::Client,
        bearer: Option<String>,
        region_flag: Option<String>,
    ) -> AwsAuth {
        AwsAuth {
            provider: provider.to_owned(),
            bearer,
            chain: Chain::new(provider, client),
            region_flag,
            region: tokio::sync::OnceCell::new(),
        }
    }

    /// The region: `--region`, else `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's (read
    /// once; never the instance metadata service, which would make a run without a region
    /// wait on the network before saying so).
    pub(crate) async fn region(&self) -> Result<String, ProviderError> {
        if let Some(r) = &self.region_flag {
            return Ok(r.clone());
        }
        let found = self
            .region
            .get_or_init(|| async {
                use aws_config::meta::region::RegionProviderChain;
                let chain = RegionProviderChain::first_try(
                    aws_config::environment::EnvironmentVariableRegionProvider::new(),
                )
                .or_else(aws_config::profile::ProfileFileRegionProvider::new());
                chain.region().await.map(|r| r.to_string())
            })
            .await;
        found.clone().ok_or_else(|| ProviderError::Credentials {
            provider: self.provider.clone(),
            message: NO_REGION.to_owned(),
            kind: Failure::Config,
        })
    }
}

#[async_trait::async_trait]
impl Authorize for AwsAuth {
    /// The API key as a bearer token, or a SigV4 signature over the whole request with
    /// credentials fresh for at least another minute.
    async fn authorize(&self, request: &mut reqwest::Request) -> Result<(), ProviderError> {
        if let Some(token) = &self.bearer {
            let value = http::secret_header(
                &self.provider,
                "AWS_BEARER_TOKEN_BEDROCK",
                &format!("Bearer {token}"),
            )?;
            request
                .headers_mut()
                .insert(reqwest::header::AUTHORIZATION, value);
            return Ok(());
        }
        let region = self.region().await?;
        let credentials = self.chain.credentials(&region).await?;
        sign_request(request, &credentials, &region, SystemTime::now())
    }
}

/// The standard chain, built once, with the credentials it gave last.
pub(crate) struct Chain {
    provider: String,
    client: reqwest::Client,
    built: tokio::sync::OnceCell<CredentialsProviderChain>,
    cached: tokio::sync::Mutex<Option<Credentials>>,
    /// Why the instance metadata service, the last source, gave nothing.
    imds_failure: Arc<Mutex<Option<String>>>,
}

impl Chain {
    pub(crate) fn new(provider: &str, client: reqwest::Client) -> Chain {
        Chain {
            provider: provider.to_owned(),
            client,
            built: tokio::sync::OnceCell::new(),
            cached: tokio::sync::Mutex::new(None),
            imds_failure: Arc::new(Mutex::new(None)),
        }
    }

    /// Credentials valid for at least another minute: the cached ones, else fresh ones from the
    /// chain. The lock makes concurrent requests wait for one fetch instead of each doing one.
    pub(crate) async fn credentials(&self, region: &str) -> Result<Credentials, ProviderError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref()
            && fresh(c, SystemTime::now())
        {
            return Ok(c.clone());
        }
        let chain = self
            .built
            .get_or_init(|| async { self.build(region) })
            .await;
        let fetched = chain.provide_credentials().await.map_err(|e| {
            let imds = self.imds_failure.lock().ok().and_then(|f| f.clone());
            credentials_error(&self.provider, &e, imds)
        })?;
        *cached = Some(fetched.clone());
        Ok(fetched)
    }
}

impl Chain {
    /// aws-config's default chain, in its order, with one change: the instance metadata
    /// service is where the chain ends when nothing else is set, so its failure (no such
    /// service off EC2, a proxy refusing the address) means "none found", a setup error, not
    /// a refusal or a network failure to retry.
    fn build(&self, region: &str) -> CredentialsProviderChain {
        let conf = ProviderConfig::default()
            .with_http_client(ReqwestHttpClient::new(self.client.clone()))
            .with_region(Some(Region::new(region.to_owned())));
        let env = EnvKeys;
        let profile = aws_config::profile::ProfileFileCredentialsProvider::builder()
            .configure(&conf)
            .build();
        let web = aws_config::web_identity_token::WebIdentityTokenCredentialsProvider::builder()
            .configure(&conf)
            .build();
        let ecs = aws_config::ecs::EcsCredentialsProvider::builder()
            .configure(&conf)
            .build();
        let imds = LastResort {
            imds: ImdsCredentialsProvider::builder().configure(&conf).build(),
            failure: self.imds_failure.clone(),
        };
        CredentialsProviderChain::first_try("Environment", env)
            .or_else("Profile", profile)
            .or_else("WebIdentityToken", web)
            .or_else("EcsContainer", ecs)
            .or_else("Ec2InstanceMetadata", imds)
    }
}

/// The variables of the chain's first source, the environment's keys.
pub(crate) const ENV_KEYS: [&str; 3] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

/// Whether the environment's keys could be sent (and signed with) as they are, for setup to
/// refuse before any request: the message names the variable, never its value.
pub(crate) fn check_env_keys(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), crate::auth::UnsendableCredential> {
    for name in ENV_KEYS {
        crate::auth::env_credential(env, name)?;
    }
    Ok(())
}

/// The environment's keys, trimmed. aws-config's own source trims the session token but not
/// the key id or the secret, so a pasted CI secret's newline made a header reqwest refuses
/// (a "network" failure, retried) or a signature AWS refuses.
#[derive(Debug)]
struct EnvKeys;

impl ProvideCredentials for EnvKeys {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::ready(env_keys(&|name| crate::env::var(name)))
    }
}

pub(crate) fn env_keys(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Credentials, CredentialsError> {
    let get = |name: &str| {
        crate::auth::env_credential(env, name).map_err(CredentialsError::invalid_configuration)
    };
    let (Some(id), Some(secret)) = (get("AWS_ACCESS_KEY_ID")?, get("AWS_SECRET_ACCESS_KEY")?)
    else {
        return Err(CredentialsError::not_loaded(
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set",
        ));
    };
    let token = get("AWS_SESSION_TOKEN")?;
    Ok(Credentials::new(
        id,
        secret,
        token,
        None,
        "EnvironmentVariable",
    ))
}

/// The instance metadata provider, whose every failure counts as "not found" (kept for the
/// message).
#[derive(Debug)]
struct LastResort {
    imds: ImdsCredentialsProvider,
    failure: Arc<Mutex<Option<String>>>,
}

impl ProvideCredentials for LastResort {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::new(async move {
            match self.imds.provide_credentials().await {
                Ok(c) => Ok(c),
                Err(e) => {
                    if !matches!(e, CredentialsError::CredentialsNotLoaded(_))
                        && let Ok(mut failure) = self.failure.lock()
                    {
                        *failure = Some(chain_text(&e));
                    }
                    Err(CredentialsError::not_loaded(chain_text(&e)))
                }
            }
        })
    }
}

/// An error and its sources, each once: `a: b: c` (the crates' own Display repeats nothing,
/// and their Debug form would dump whole responses).
fn chain_text(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Whether credentials may still sign a request now (those without an expiry never expire).
fn fresh(c: &Credentials, now: SystemTime) -> bool {
    c.expiry().is_none_or(|at| {
        at.duration_since(now)
            .is_ok_and(|left| left > REFRESH_AHEAD)
    })
}

#[cfg(test)]
pub(crate) fn fresh_for_test(c: &Credentials, now: SystemTime) -> bool {
    fresh(c, now)
}

/// The chain's error as a provider error: nothing found or malformed is a setup error (exit 2),
/// a refusal (STS denying the role) is an auth failure, anything else (an endpoint that cannot
/// be reached or timed out) is retried as a network failure. The chain's messages name files,
/// variables and roles, never a secret.
fn credentials_error(provider: &str, e: &CredentialsError, imds: Option<String>) -> ProviderError {
    let (kind, message) = match e {
        CredentialsError::CredentialsNotLoaded(_) => (
            Failure::Config,
            match imds {
                Some(why) => {
                    format!("no AWS credentials found; tried {TRIED} (which answered: {why})")
                }
                None => format!("no AWS credentials found; tried {TRIED}"),
            },
        ),
        CredentialsError::InvalidConfiguration(_) => (
            Failure::Config,
            format!("the AWS credentials are misconfigured: {}", chain_text(e)),
        ),
        CredentialsError::ProviderError(_) => (
            Failure::Auth,
            format!("getting AWS credentials was refused: {}", chain_text(e)),
        ),
        _ => (
            Failure::Network,
            format!("getting AWS credentials failed: {}", chain_text(e)),
        ),
    };
    ProviderError::Credentials {
        provider: provider.to_owned(),
        message,
        kind,
    }
}

/// Signs `request` (method, URL, every header it has, the whole body) with SigV4 for `region`
/// at `time`, adding `x-amz-date`, `authorization` and, for temporary credentials,
/// `x-amz-security-token` (the last two marked sensitive).
pub(crate) fn sign_request(
    request: &mut reqwest::Request,
    credentials: &Credentials,
    region: &str,
    time: SystemTime,
) -> Result<(), ProviderError> {
    let failed = |what: String| ProviderError::Credentials {
        provider: "bedrock".into(),
        message: format!("signing the request failed: {what}"),
        kind: Failure::Internal,
    };
    let identity = credentials.clone().into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SIGNING_NAME)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| failed(e.to_string()))?
        .into();
    let body = request.body().and_then(|b| b.as_bytes()).unwrap_or(&[]);
    let headers: Vec<(&str, &str)> = request
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
        .collect();
    let signable = SignableRequest::new(
        request.method().as_str(),
        request.url().as_str(),
        headers.into_iter(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| failed(e.to_string()))?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|e| failed(e.to_string()))?
        .into_parts();
    let (headers, _params) = instructions.into_parts();
    for header in headers {
        // The signature is no secret once sent, but marked so no debug output shows it.
        let secret =
            header.sensitive() || matches!(header.name(), "authorization" | "x-amz-security-token");
        let value = if secret {
            http::secret_header("bedrock", "the AWS credentials", header.value())?
        } else {
            reqwest::header::HeaderValue::from_str(header.value())
                .map_err(|e| failed(e.to_string()))?
        };
        request.headers_mut().insert(header.name(), value);
    }
    Ok(())
}

/// Which credentials a Bedrock run would use and where they come from, for `rounds doctor`:
/// read from variable names and file existence only, never a secret and never the network.
/// A key no request could carry is a line starting "none usable", which doctor fails.
pub(crate) fn describe_credentials(env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let set = |name: &str| env(name).is_some_and(|v| !v.trim().is_empty());
    let mut lines = Vec::new();
    let bearer = crate::auth::env_credential(env, "AWS_BEARER_TOKEN_BEDROCK");
    let unusable = match bearer {
        Err(why) => Some(why),
        Ok(Some(_)) => None,
        Ok(None) => check_env_keys(env).err(),
    };
    let source = if let Some(why) = unusable {
        format!("none usable: {why}")
    } else if set("AWS_BEARER_TOKEN_BEDROCK") {
        "a Bedrock API key from AWS_BEARER_TOKEN_BEDROCK (sent as a bearer token, not signed)"
            .to_owned()
    } else if set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY") {
        let session = if set("AWS_SESSION_TOKEN") {
            " with AWS_SESSION_TOKEN"
        } else {
            ""
        };
        format!(
            "access keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY{session}, signed (SigV4)"
        )
    } else {
        chain_description(env)
    };
    lines.push(source);
    lines.push(format!("region: {}", region_description(env)));
    lines
}

/// What the chain past the environment's keys would try first.
fn chain_description(env: &dyn Fn(&str) -> Option<String>) -> String {
    let get = |name: &str| env(name).filter(|v| !v.is_empty());
    let profile = get("AWS_PROFILE").unwrap_or_else(|| "default".to_owned());
    let home = get("HOME").unwrap_or_default();
    let files: Vec<String> = [
        get("AWS_SHARED_CREDENTIALS_FILE").unwrap_or(format!("{home}/.aws/credentials")),
        get("AWS_CONFIG_FILE").unwrap_or(format!("{home}/.aws/config")),
    ]
    .into_iter()
    .filter(|f| std::path::Path::new(f).is_file())
    .collect();
    if !files.is_empty() {
        return format!(
            "the profile `{profile}` in {}, signed (SigV4); if it has no credentials, the \
             sources after it",
            files.join(" and ")
        );
    }
    if let (Some(file), Some(role)) = (get("AWS_WEB_IDENTITY_TOKEN_FILE"), get("AWS_ROLE_ARN")) {
        let sts = get("AWS_ENDPOINT_URL_STS")
            .or_else(|| get("AWS_ENDPOINT_URL"))
            .map(|u| format!(" at {u}"))
            .unwrap_or_default();
        return format!(
            "web identity: the token in {file} exchanged with STS{sts} for the role {role} \
             (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), refreshed before it expires"
        );
    }
    for name in [
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    ] {
        if set_in(env, name) {
            return format!("container credentials from the endpoint in {name}");
        }
    }
    if get("AWS_EC2_METADATA_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return format!("none found (AWS_EC2_METADATA_DISABLED=true); tried {TRIED}");
    }
    "the EC2 instance metadata service (not probed; nothing else in the chain is set)".to_owned()
}

fn set_in(env: &dyn Fn(&str) -> Option<String>, name: &str) -> bool {
    env(name).is_some_and(|v| !v.is_empty())
}

fn region_description(env: &dyn Fn(&str) -> Option<String>) -> String {
    for name in ["AWS_REGION", "AWS_DEFAULT_REGION"] {
        if let Some(region) = env(name).filter(|v| !v.is_empty()) {
            return format!("{region} (from {name}; --region overrides it)");
        }
    }
    "from --region, else the profile's `region` (no AWS_REGION or AWS_DEFAULT_REGION set)"
        .to_owned()
}
