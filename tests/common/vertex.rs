//! A loopback Google: Vertex AI's model routes and every token endpoint Application Default
//! Credentials use, on one `MockServer`. The OAuth endpoint verifies service-account assertions
//! (RS256 against the test key's public half, and google-auth's claims); the model routes
//! accept only a token this server issued and that has not expired, so a run that sent a stale
//! or made-up token fails.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::mock::{MockServer, Recorded, Reply, Step};

pub const EMAIL: &str = "runner@key-project.iam.gserviceaccount.com";
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// google-auth's audience for every assertion.
pub const AUDIENCE: &str = "https://oauth2.googleapis.com/token";
pub const REFRESH_TOKEN: &str = "1//refresh-token-secret";
pub const CLIENT_SECRET: &str = "user-client-secret";

pub fn fixture(name: &str) -> String {
    format!("{}/fixtures/vertex/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The test key's PEM (a test-only key, vendored).
pub fn private_key() -> String {
    std::fs::read_to_string(fixture("test-key.pem")).expect("test key")
}

/// A service-account key file whose `token_uri` is `server`'s.
pub fn key_file(server: &str) -> Value {
    json!({
        "type": "service_account",
        "project_id": "key-project",
        "private_key_id": "kid-1",
        "private_key": private_key(),
        "client_email": EMAIL,
        "client_id": "1",
        "token_uri": format!("{server}/token"),
    })
}

pub fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, value.to_string()).expect("write");
}

/// A token request's fields, from a form or (google-cloud-auth's refresh grant) a JSON object.
pub fn form(r: &Recorded) -> BTreeMap<String, String> {
    if let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(&r.body) {
        return fields
            .into_iter()
            .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect();
    }
    form_urlencoded::parse(&r.body).into_owned().collect()
}

/// What the server saw: every token request, and anything it found wrong.
#[derive(Default)]
pub struct Seen {
    pub tokens: Vec<Recorded>,
    pub problems: Vec<String>,
    /// Token → when it expires.
    issued: HashMap<String, Instant>,
}

pub struct Google {
    pub server: MockServer,
    pub seen: Arc<Mutex<Seen>>,
}

impl Google {
    /// Serves `replies` to model requests in order (the first after `pause`), and tokens that
    /// live `lifetime` seconds.
    pub fn start(replies: Vec<Reply>, lifetime: u64, pause: Duration) -> Google {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let state = seen.clone();
        let mut replies = replies.into_iter();
        let mut first = true;
        let server = MockServer::respond(move |r| {
            let mut seen = state.lock().unwrap();
            if r.path.contains("/publishers/") {
                if let Err(problem) = seen.check_bearer(r) {
                    seen.problems.push(problem.clone());
                    let body = json!({"error": {"code": 401, "message": problem,
                        "status": "UNAUTHENTICATED"}});
                    return Reply::error(401, &body.to_string());
                }
                let mut reply = replies
                    .next()
                    .unwrap_or_else(|| super::sse::answer("extra"));
                if first && !pause.is_zero() {
                    reply.body.insert(0, Step::Sleep(pause));
                }
                first = false;
                return reply;
            }
            seen.token_route(r, lifetime)
        });
        Google { server, seen }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    /// `127.0.0.1:PORT`, as `GCE_METADATA_HOST` takes it.
    pub fn host(&self) -> String {
        self.server.addr.to_string()
    }

    /// The model requests, in order.
    pub fn model_requests(&self) -> Vec<Recorded> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.path.contains("/publishers/"))
            .collect()
    }

    pub fn tokens(&self) -> Vec<Recorded> {
        self.seen.lock().unwrap().tokens.clone()
    }

    pub fn problems(&self) -> Vec<String> {
        self.seen.lock().unwrap().problems.clone()
    }
}

impl Seen {
    fn check_bearer(&self, r: &Recorded) -> Result<(), String> {
        let token = r
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .ok_or("no bearer token")?;
        match self.issued.get(token) {
            None => Err(format!("a token this server never issued: {token}")),
            Some(expiry) if *expiry <= Instant::now() => Err(format!("an expired token: {token}")),
            Some(_) => Ok(()),
        }
    }

    fn issue(&mut self, prefix: &str, lifetime: u64) -> String {
        let token = format!("{prefix}-{}", self.issued.len() + 1);
        let expiry = Instant::now() + Duration::from_secs(lifetime);
        self.issued.insert(token.clone(), expiry);
        token
    }

    fn token_route(&mut self, r: &Recorded, lifetime: u64) -> Reply {
        self.tokens.push(r.clone());
        let path = r.path.split('?').next().unwrap_or("");
        let outcome = match path {
            "/token" => self.service_account(r, lifetime),
            "/sts" => self.sts(r, lifetime),
            "/user-token" => self.user(r, lifetime),
            "/computeMetadata/v1/" => return metadata(json!("ok")),
            "/computeMetadata/v1/instance/service-accounts/default/token" => {
                self.metadata(r, lifetime)
            }
            p if p.ends_with(":generateAccessToken") => self.impersonate(r),
            "/oidc" => github_oidc(r),
            _ => Err(format!("no route for {}", r.path)),
        };
        match outcome {
            Ok(reply) => reply,
            Err(problem) => {
                self.problems.push(problem.clone());
                let body = json!({"error": "invalid_grant", "error_description": problem});
                Reply::error(400, &body.to_string())
            }
        }
    }

    fn service_account(&mut self, r: &Recorded, lifetime: u64) -> Result<Reply, String> {
        let form = form(r);
        if form.get("grant_type").map(String::as_str)
            != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
        {
            return Err(format!("grant_type {:?}", form.get("grant_type")));
        }
        verify_assertion(form.get("assertion").ok_or("no assertion")?)?;
        let token = self.issue("sa-token", lifetime);
        Ok(json_reply(
            json!({"access_token": token, "expires_in": lifetime, "token_type": "Bearer"}),
        ))
    }

    fn sts(&mut self, r: &Recorded, lifetime: u64) -> Result<Reply, String> {
        let form = form(r);
        let want = [
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            ("subject_token_type", "urn:ietf:params:oauth:token-type:jwt"),
        ];
        for (k, v) in want {
            if form.get(k).map(String::as_str) != Some(v) {
                return Err(format!("STS {k} is {:?}", form.get(k)));
            }
        }
        let token = self.issue("sts-token", lifetime);
        Ok(json_reply(
            json!({"access_token": token, "expires_in": lifetime,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "token_type": "Bearer"}),
        ))
    }

    fn user(&mut self, r: &Recorded, lifetime: u64) -> Result<Reply, String> {
        let form = form(r);
        if form.get("grant_type").map(String::as_str) != Some("refresh_token")
            || form.get("refresh_token").map(String::as_str) != Some(REFRESH_TOKEN)
        {
            return Err(format!(
                "not this user's refresh grant: {:?}",
                form.get("grant_type")
            ));
        }
        let token = self.issue("user-token", lifetime);
        Ok(json_reply(
            json!({"access_token": token, "expires_in": lifetime, "token_type": "Bearer"}),
        ))
    }

    fn metadata(&mut self, r: &Recorded, lifetime: u64) -> Result<Reply, String> {
        if r.header("metadata-flavor") != Some("Google") {
            return Err("a metadata request without Metadata-Flavor: Google".into());
        }
        let token = self.issue("mds-token", lifetime);
        Ok(metadata(
            json!({"access_token": token, "expires_in": lifetime, "token_type": "Bearer"}),
        ))
    }

    /// IAM Credentials' generateAccessToken, called with the STS token.
    fn impersonate(&mut self, r: &Recorded) -> Result<Reply, String> {
        self.check_bearer(r)?;
        let token = self.issue("impersonated-token", 3600);
        let expire = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(3600);
        Ok(json_reply(
            json!({"accessToken": token, "expireTime": expire.to_string()}),
        ))
    }
}

/// GitHub's OIDC token endpoint as google-github-actions/auth's file asks it: a bearer
/// request token, the audience in the query, the token in the JSON's `value`.
fn github_oidc(r: &Recorded) -> Result<Reply, String> {
    if r.header("authorization") != Some(concat!("Bearer ", "gh-request-token")) {
        return Err("the OIDC request without the runner's request token".into());
    }
    if !r.path.contains("audience=") {
        return Err(format!("no audience in {}", r.path));
    }
    Ok(json_reply(json!({"value": "github-oidc-jwt", "count": 1})))
}

fn json_reply(body: Value) -> Reply {
    Reply::error(200, &body.to_string())
}

fn metadata(body: Value) -> Reply {
    let mut reply = json_reply(body);
    reply
        .headers
        .push(("metadata-flavor".into(), "Google".into()));
    reply
}

/// Checks a service-account assertion as Google's OAuth server would: RS256 by the key, and
/// the claims google-auth sends.
pub fn verify_assertion(jwt: &str) -> Result<Value, String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err("not a JWT".into());
    };
    let decode = |p: &str| -> Result<Value, String> {
        let bytes = URL_SAFE_NO_PAD.decode(p).map_err(|e| e.to_string())?;
        serde_json::from_slice(&bytes).map_err(|e| e.to_string())
    };
    let header = decode(header)?;
    if header["alg"] != "RS256" || header["kid"] != "kid-1" {
        return Err(format!("header {header}"));
    }
    let public = std::fs::read(fixture("test-key.pub.der")).map_err(|e| e.to_string())?;
    let key = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        public,
    );
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|e| e.to_string())?;
    let signed = &jwt[..jwt.rfind('.').unwrap_or(0)];
    key.verify(signed.as_bytes(), &signature)
        .map_err(|_| "the assertion's signature does not verify".to_owned())?;
    let claims = decode(claims)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let iat = claims["iat"].as_u64().unwrap_or(0);
    let fine = claims["iss"] == EMAIL
        && claims["aud"] == AUDIENCE
        && claims["scope"] == SCOPE
        && iat.abs_diff(now) < 60
        && claims["exp"].as_u64() == Some(iat + 3600);
    if !fine {
        return Err(format!("claims {claims}"));
    }
    Ok(claims)
}
