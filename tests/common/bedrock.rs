//! A loopback AWS for the Bedrock tests: one HTTP/1.1 server on 127.0.0.1:0 that speaks the
//! Converse stream (AWS's binary event stream, frames written by AWS's own encoder and cut
//! mid-frame across HTTP chunks), STS's AssumeRoleWithWebIdentity, the container credentials
//! endpoint and IMDSv2, each handing out its own keys. Every model request's Authorization is
//! checked: a bearer token must be the expected one; a SigV4 signature is recomputed (with
//! aws-sigv4, from the secret the mock issued for that access key) and must match. botocore's
//! signer is the independent check of the signing itself (the unit tests' vectors); this checks
//! which keys signed each request.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use aws_smithy_types::event_stream::{Header, HeaderValue, Message};

/// What a model request is answered with.
#[derive(Clone, Debug)]
pub enum ModelReply {
    /// A 200 event stream of these frames.
    Frames(Vec<Vec<u8>>),
    /// An error before the stream: status, `x-amzn-ErrorType`, message.
    Error(u16, &'static str, &'static str),
}

/// How a model request proved who sent it.
#[derive(Clone, Debug, PartialEq)]
pub enum Auth {
    /// SigV4 by this access key; `valid` when the signature matches the mock's recomputation.
    SigV4 {
        access_key: String,
        valid: bool,
        scope: String,
    },
    Bearer(String),
    Missing,
}

#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Set for model requests.
    pub auth: Option<Auth>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    pub fn is_model(&self) -> bool {
        self.path.contains("/converse-stream")
    }
}

#[derive(Default)]
struct State {
    replies: VecDeque<ModelReply>,
    seen: Vec<Seen>,
    /// Issued keys: access key id → (secret, session token).
    keys: HashMap<String, (String, Option<String>)>,
    issued: HashMap<&'static str, usize>,
    /// How long issued credentials last, in seconds.
    lifetime: i64,
    bearer: Option<String>,
}

pub struct AwsMock {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl AwsMock {
    /// Answers model requests with `replies` in order; issued credentials last an hour.
    pub fn start(replies: Vec<ModelReply>) -> AwsMock {
        let state = Arc::new(Mutex::new(State {
            replies: replies.into(),
            lifetime: 3600,
            ..State::default()
        }));
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("addr");
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        AwsMock { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Keys the mock accepts without having issued them (environment keys, a profile's).
    pub fn accept(&self, access_key: &str, secret: &str, token: Option<&str>) {
        self.state
            .lock()
            .unwrap()
            .keys
            .insert(access_key.into(), (secret.into(), token.map(str::to_owned)));
    }

    pub fn accept_bearer(&self, token: &str) {
        self.state.lock().unwrap().bearer = Some(token.into());
    }

    /// Credentials issued from now on last `secs` seconds.
    pub fn lifetime(&self, secs: i64) {
        self.state.lock().unwrap().lifetime = secs;
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    pub fn model_requests(&self) -> Vec<Seen> {
        self.seen().into_iter().filter(Seen::is_model).collect()
    }

    /// How many times `source` (`sts`, `container`, `imds`) issued credentials.
    pub fn issued(&self, source: &str) -> usize {
        self.state
            .lock()
            .unwrap()
            .issued
            .get(source)
            .copied()
            .unwrap_or(0)
    }

    /// Every secret the mock issued (to check none leaks).
    pub fn issued_secrets(&self) -> Vec<String> {
        let state = self.state.lock().unwrap();
        state
            .keys
            .values()
            .flat_map(|(s, t)| std::iter::once(s.clone()).chain(t.clone()))
            .collect()
    }
}

/// An event frame as Bedrock sends one, written by AWS's encoder.
pub fn event(kind: &str, payload: serde_json::Value) -> Vec<u8> {
    frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        &payload.to_string(),
    )
}

/// An exception frame as Bedrock sends one.
pub fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        &serde_json::json!({ "message": message }).to_string(),
    )
}

fn frame(headers: &[(&str, &str)], payload: &str) -> Vec<u8> {
    let headers = headers
        .iter()
        .map(|(n, v)| Header::new(n.to_string(), HeaderValue::String(v.to_string().into())))
        .collect();
    let message = Message::new_from_parts(headers, payload.as_bytes().to_vec());
    let mut out = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut out).expect("encode frame");
    out
}

/// A whole Converse response: optional text, tool calls `(id, name, input JSON)`, the stop
/// reason and the usage.
pub fn response(
    text: &str,
    calls: &[(&str, &str, &str)],
    stop: &str,
    usage: (u64, u64),
) -> ModelReply {
    let mut frames = vec![event(
        "messageStart",
        serde_json::json!({"role": "assistant"}),
    )];
    let mut index = 0;
    if !text.is_empty() {
        // Two deltas, to exercise joining.
        let (a, b) = text.split_at(text.len() / 2);
        for piece in [a, b] {
            frames.push(event(
                "contentBlockDelta",
                serde_json::json!({"contentBlockIndex": 0, "delta": {"text": piece}}),
            ));
        }
        frames.push(event(
            "contentBlockStop",
            serde_json::json!({"contentBlockIndex": 0}),
        ));
        index = 1;
    }
    for (id, name, input) in calls {
        frames.push(event(
            "contentBlockStart",
            serde_json::json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": name}}}),
        ));
        frames.push(event(
            "contentBlockDelta",
            serde_json::json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": input}}}),
        ));
        frames.push(event(
            "contentBlockStop",
            serde_json::json!({"contentBlockIndex": index}),
        ));
        index += 1;
    }
    frames.push(event(
        "messageStop",
        serde_json::json!({"stopReason": stop}),
    ));
    frames.push(event(
        "metadata",
        serde_json::json!({"usage": {"inputTokens": usage.0, "outputTokens": usage.1,
            "totalTokens": usage.0 + usage.1}, "metrics": {"latencyMs": 5}}),
    ));
    ModelReply::Frames(frames)
}

fn serve(stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut writer = stream;
    while let Some(mut seen) = read_request(&mut reader) {
        let reply = answer(&mut seen, state);
        state.lock().unwrap().seen.push(seen);
        if write(&mut writer, reply).is_err() {
            return;
        }
    }
}

/// A reply: status, headers, body chunks.
type Out = (u16, Vec<(String, String)>, Vec<Vec<u8>>);

fn plain(status: u16, content_type: &str, body: String) -> Out {
    (
        status,
        vec![("content-type".into(), content_type.into())],
        vec![body.into_bytes()],
    )
}

fn answer(seen: &mut Seen, state: &Mutex<State>) -> Out {
    let path = seen.path.clone();
    if seen.is_model() {
        let auth = check_auth(seen, &state.lock().unwrap());
        let ok = matches!(&auth, Auth::SigV4 { valid: true, .. })
            || matches!(&auth, Auth::Bearer(t) if state.lock().unwrap().bearer.as_deref() == Some(t));
        seen.auth = Some(auth);
        if !ok {
            return aws_error(
                403,
                "InvalidSignatureException",
                "The request signature we calculated does not match the signature you provided.",
            );
        }
        return match state.lock().unwrap().replies.pop_front() {
            Some(ModelReply::Frames(frames)) => {
                // Each frame cut in two chunks: the client sees frames split across reads.
                let chunks = frames
                    .iter()
                    .flat_map(|f| {
                        let (a, b) = f.split_at(f.len() / 2);
                        [a.to_vec(), b.to_vec()]
                    })
                    .collect();
                (
                    200,
                    vec![(
                        "content-type".into(),
                        "application/vnd.amazon.eventstream".into(),
                    )],
                    chunks,
                )
            }
            Some(ModelReply::Error(status, kind, message)) => aws_error(status, kind, message),
            None => aws_error(
                500,
                "InternalServerException",
                "the mock has no more replies",
            ),
        };
    }
    if seen.method == "PUT" && path == "/latest/api/token" {
        return (
            200,
            vec![(
                "x-aws-ec2-metadata-token-ttl-seconds".into(),
                "21600".into(),
            )],
            vec![b"imds-session-token".to_vec()],
        );
    }
    if path == "/latest/meta-data/iam/security-credentials/" {
        return plain(200, "text/plain", "rounds-instance-role".into());
    }
    if path == "/latest/meta-data/iam/security-credentials/rounds-instance-role" {
        let (akid, secret, token, expiry) = issue(state, "imds");
        let body = serde_json::json!({"Code": "Success", "LastUpdated": expiry, "Type": "AWS-HMAC",
            "AccessKeyId": akid, "SecretAccessKey": secret, "Token": token, "Expiration": expiry});
        return plain(200, "application/json", body.to_string());
    }
    if path == "/container-credentials" {
        let (akid, secret, token, expiry) = issue(state, "container");
        let body = serde_json::json!({"AccessKeyId": akid, "SecretAccessKey": secret,
            "Token": token, "Expiration": expiry});
        return plain(200, "application/json", body.to_string());
    }
    let form = String::from_utf8_lossy(&seen.body).into_owned();
    if seen.method == "POST" && form.contains("Action=AssumeRoleWithWebIdentity") {
        let (akid, secret, token, expiry) = issue(state, "sts");
        return plain(200, "text/xml", sts_xml(&akid, &secret, &token, &expiry));
    }
    plain(
        404,
        "text/plain",
        format!("the mock does not serve {} {path}", seen.method),
    )
}

fn aws_error(status: u16, kind: &str, message: &str) -> Out {
    let (code, mut headers, body) = plain(
        status,
        "application/json",
        serde_json::json!({ "message": message }).to_string(),
    );
    headers.push((
        "x-amzn-errortype".into(),
        format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
    ));
    (code, headers, body)
}

/// New keys from `source`, remembered for checking signatures: (id, secret, token, expiry).
fn issue(state: &Mutex<State>, source: &'static str) -> (String, String, String, String) {
    let mut state = state.lock().unwrap();
    let n = {
        let count = state.issued.entry(source).or_insert(0);
        *count += 1;
        *count
    };
    let akid = format!("ASIA{}{n}", source.to_ascii_uppercase());
    let secret = format!("{source}-secret-{n}-DO-NOT-LEAK");
    let token = format!("{source}-session-token-{n}-DO-NOT-LEAK");
    state
        .keys
        .insert(akid.clone(), (secret.clone(), Some(token.clone())));
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(state.lifetime);
    (
        akid,
        secret,
        token,
        at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    )
}

fn sts_xml(akid: &str, secret: &str, token: &str, expiry: &str) -> String {
    format!(
        r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>{akid}</AccessKeyId>
      <SecretAccessKey>{secret}</SecretAccessKey>
      <SessionToken>{token}</SessionToken>
      <Expiration>{expiry}</Expiration>
    </Credentials>
    <SubjectFromWebIdentityToken>repo:example/rounds:ref:refs/heads/main</SubjectFromWebIdentityToken>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/ci/rounds</Arn>
      <AssumedRoleId>AROAEXAMPLE:rounds</AssumedRoleId>
    </AssumedRoleUser>
    <Provider>token.actions.githubusercontent.com</Provider>
    <Audience>sts.amazonaws.com</Audience>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>mock-1</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>"#
    )
}

/// Who signed `seen`, and whether the signature is right for the secret the mock knows.
fn check_auth(seen: &Seen, state: &State) -> Auth {
    let Some(value) = seen.header("authorization") else {
        return Auth::Missing;
    };
    if let Some(token) = value.strip_prefix("Bearer ") {
        return Auth::Bearer(token.to_owned());
    }
    let Some(rest) = value.strip_prefix("AWS4-HMAC-SHA256 ") else {
        return Auth::Missing;
    };
    let field = |name: &str| {
        rest.split(", ")
            .find_map(|p| p.strip_prefix(name))
            .unwrap_or("")
            .to_owned()
    };
    let credential = field("Credential=");
    let (access_key, scope) = credential.split_once('/').unwrap_or(("", ""));
    let signed: Vec<String> = field("SignedHeaders=")
        .split(';')
        .map(str::to_owned)
        .collect();
    let valid = state.keys.get(access_key).is_some_and(|(secret, token)| {
        seen.header("x-amz-security-token") == token.as_deref()
            && recompute(seen, &signed, access_key, secret, token.clone(), scope)
                == field("Signature=")
    });
    Auth::SigV4 {
        access_key: access_key.to_owned(),
        valid,
        scope: scope.to_owned(),
    }
}

fn recompute(
    seen: &Seen,
    signed: &[String],
    access_key: &str,
    secret: &str,
    token: Option<String>,
    scope: &str,
) -> String {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    let parts: Vec<&str> = scope.split('/').collect();
    let [_, region, service, _] = parts[..] else {
        return String::new();
    };
    let Some(time) = seen.header("x-amz-date").and_then(parse_amz_date) else {
        return String::new();
    };
    let identity =
        aws_credential_types::Credentials::new(access_key, secret, token, None, "mock").into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .expect("params")
        .into();
    // The signer adds host, x-amz-date and the token itself.
    let headers = seen.headers.iter().filter(|(k, _)| {
        signed.contains(k) && !matches!(k.as_str(), "host" | "x-amz-date" | "x-amz-security-token")
    });
    let host = seen.header("host").unwrap_or("");
    let uri = format!("http://{host}{}", seen.path);
    let Ok(request) = SignableRequest::new(
        &seen.method,
        uri,
        headers.map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Bytes(&seen.body),
    ) else {
        return String::new();
    };
    match sign(request, &params) {
        Ok(out) => out.signature().to_owned(),
        Err(_) => String::new(),
    }
}

fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let dt = jiff::civil::DateTime::strptime("%Y%m%dT%H%M%SZ", s).ok()?;
    let ts = dt.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp();
    Some(SystemTime::from(ts))
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Seen> {
    let r = super::mock::read_request(reader)?;
    Some(Seen {
        method: r.method,
        path: r.path,
        headers: r.headers,
        body: r.body,
        auth: None,
    })
}

fn write(w: &mut TcpStream, (status, headers, chunks): Out) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} Mock\r\ntransfer-encoding: chunked\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    for chunk in chunks.iter().filter(|c| !c.is_empty()) {
        w.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())?;
        w.write_all(chunk)?;
        w.write_all(b"\r\n")?;
        w.flush()?;
    }
    w.write_all(b"0\r\n\r\n")?;
    w.flush()
}
