//! A service-account key's access token: a JWT assertion signed with the key (RS256, by ring,
//! which rustls already brings), exchanged at the key's own `token_uri` (RFC 7523's JWT bearer
//! grant), as google-auth does by default. google-cloud-auth would instead sign a JWT and send
//! it as the token itself, never asking `token_uri`: that skips the file's own token endpoint,
//! which private setups point elsewhere.
//!
//! The token is cached and fetched again ahead of its expiry, one fetch at a time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use rustls_pki_types::PrivatePkcs8KeyDer;
use rustls_pki_types::pem::PemObject;
use serde::Deserialize;
use serde_json::json;
use tokio::time::Instant;

use super::adc::{AuthError, SCOPE};

/// Where Google's own keys send assertions, for a key file without `token_uri`.
pub(crate) const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// How long an assertion is valid: Google accepts at most an hour.
const ASSERTION_LIFETIME: u64 = 3600;
/// Fetch a new token this long before the old one expires (google-cloud-auth's margin), or at
/// half its life if it lives shorter.
const REFRESH_AHEAD: Duration = Duration::from_secs(240);
/// The wait for the token endpoint's whole answer.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The parts of a key file this module uses. No `Debug`: it holds the private key.
#[derive(Deserialize)]
struct KeyFile {
    client_email: String,
    private_key: String,
    #[serde(default)]
    private_key_id: Option<String>,
    #[serde(default)]
    token_uri: Option<String>,
    #[serde(default)]
    project_id: Option<String>,
}

pub(crate) struct ServiceAccount {
    email: String,
    key_id: Option<String>,
    token_uri: String,
    project: Option<String>,
    key: RsaKeyPair,
    cached: tokio::sync::Mutex<Option<Token>>,
}

#[derive(Clone)]
struct Token {
    header: String,
    /// When to fetch the next one.
    refresh_at: Instant,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

impl ServiceAccount {
    /// The key in `json`, checked now so that a broken file stops the run before any request.
    /// `origin` names the file in errors.
    pub(crate) fn parse(
        json: serde_json::Value,
        origin: &str,
    ) -> Result<ServiceAccount, AuthError> {
        let bad = |what: String| AuthError::config(format!("vertex: {origin}: {what}"));
        let file: KeyFile = serde_json::from_value(json)
            .map_err(|e| bad(format!("not a service-account key ({e})")))?;
        // The PEM's text never goes into a message: only what kind of failure it was.
        let der = PrivatePkcs8KeyDer::from_pem_slice(file.private_key.as_bytes())
            .map_err(|_| bad("private_key is not a PKCS#8 PEM key".into()))?;
        let key = RsaKeyPair::from_pkcs8(der.secret_pkcs8_der())
            .map_err(|e| bad(format!("private_key is not a usable RSA key ({e})")))?;
        Ok(ServiceAccount {
            email: file.client_email,
            key_id: file.private_key_id,
            token_uri: file
                .token_uri
                .unwrap_or_else(|| DEFAULT_TOKEN_URI.to_owned()),
            project: file.project_id,
            key,
            cached: tokio::sync::Mutex::new(None),
        })
    }

    pub(crate) fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// `Bearer TOKEN`, from the cache while it is fresh.
    pub(crate) async fn bearer(&self, client: &reqwest::Client) -> Result<String, AuthError> {
        let mut cached = self.cached.lock().await;
        if let Some(token) = cached.as_ref()
            && Instant::now() < token.refresh_at
        {
            return Ok(token.header.clone());
        }
        let token = self.fetch(client).await?;
        let header = token.header.clone();
        *cached = Some(token);
        Ok(header)
    }

    /// The assertion for now: header, claims and signature, as google-auth makes it.
    pub(crate) fn assertion(&self, now: u64) -> Result<String, AuthError> {
        let mut header = json!({"alg": "RS256", "typ": "JWT"});
        if let Some(kid) = &self.key_id {
            header["kid"] = kid.clone().into();
        }
        let claims = json!({
            "iss": self.email,
            "scope": SCOPE,
            // google-auth's audience whatever the token_uri: the service behind any token
            // endpoint (a private one too) is Google's OAuth server.
            "aud": DEFAULT_TOKEN_URI,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME,
        });
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut signature = vec![0; self.key.public().modulus_len()];
        let rng = ring::rand::SystemRandom::new();
        self.key
            .sign(&RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut signature)
            .map_err(|_| {
                AuthError::config("vertex: signing with the service-account key failed")
            })?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }

    async fn fetch(&self, client: &reqwest::Client) -> Result<Token, AuthError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", JWT_BEARER)
            .append_pair("assertion", &self.assertion(now)?)
            .finish();
        let asked = Instant::now();
        let what = format!(
            "the service account {}'s token from {}",
            self.email, self.token_uri
        );
        let response = client
            .post(&self.token_uri)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .timeout(TOKEN_TIMEOUT)
            .send()
            .await
            .map_err(|e| {
                let message = format!("vertex: {what}: {}", crate::net::describe(&e));
                // A token_uri reqwest cannot make a request of is the key file's to fix.
                match e.is_builder() {
                    true => AuthError::config(message),
                    false => AuthError::network(message),
                }
            })?;
        let status = response.status();
        let body = crate::http::token_body(response, TOKEN_TIMEOUT)
            .await
            .map_err(|e| AuthError {
                kind: e.kind(),
                message: format!("vertex: {what}: {e}"),
            })?;
        let body = String::from_utf8_lossy(&body);
        if !status.is_success() {
            return Err(AuthError::of_status(status.as_u16(), &what, &body));
        }
        let answer: TokenResponse = serde_json::from_str(&body)
            .map_err(|_| AuthError::auth(format!("vertex: {what}: the answer is not a token")))?;
        let lifetime = Duration::from_secs(answer.expires_in.unwrap_or(3600));
        let ahead = REFRESH_AHEAD.min(lifetime / 2);
        Ok(Token {
            header: format!("Bearer {}", answer.access_token),
            refresh_at: asked + lifetime - ahead,
        })
    }
}
