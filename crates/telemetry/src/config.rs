//! Where telemetry goes, from the standard `OTEL_*` variables and the user's `--otel-endpoint`.
//!
//! Off unless an endpoint is given. The variables are the OpenTelemetry SDK's own (the OTLP
//! exporter specification): `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL, to which `/v1/traces`
//! and `/v1/metrics` are added) or the per-signal `…_TRACES_ENDPOINT` and `…_METRICS_ENDPOINT`
//! (used as they are); `OTEL_EXPORTER_OTLP_HEADERS` (and per signal), `k=v` pairs separated by
//! commas, values percent-encoded; `OTEL_EXPORTER_OTLP_PROTOCOL` (and per signal):
//! `http/protobuf` (the default) or `http/json`; `OTEL_SERVICE_NAME` (default `rounds`);
//! `OTEL_RESOURCE_ATTRIBUTES`; `OTEL_SDK_DISABLED=true`, and `OTEL_TRACES_EXPORTER=none` or
//! `OTEL_METRICS_EXPORTER=none` for one signal. Only the user sets these: the environment is
//! theirs, and the flag's settings key is one a project file, job line or queue row may not set.

use std::fmt;

/// An OTLP/HTTP encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: the OTLP default.
    Protobuf,
    /// `http/json`.
    Json,
}

/// Where one signal goes.
#[derive(Clone, PartialEq, Eq)]
pub struct Signal {
    /// The full URL requests are posted to.
    pub url: String,
    pub protocol: Protocol,
    /// Sent with every request: credentials, as a rule. Never printed ([`fmt::Debug`] says
    /// how many there are, not what).
    pub headers: Vec<(String, String)>,
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal")
            .field("url", &self.url)
            .field("protocol", &self.protocol)
            .field(
                "headers",
                &format_args!("[{} redacted]", self.headers.len()),
            )
            .finish()
    }
}

/// What a run exports, and to where. `None` of both signals is telemetry off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub traces: Option<Signal>,
    pub metrics: Option<Signal>,
    /// `service.name` of the resource.
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, in order, without `service.name` (which is `service_name`).
    pub resource: Vec<(String, String)>,
    /// Whether prompts, model text and tool inputs and outputs are exported (redacted as the
    /// transcript is): `--otel-content`. Off, spans carry sizes and names, never content.
    pub content: bool,
}

/// A variable or the flag holds what OTLP cannot use: the run does not start (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{var}: {value:?} is not an http:// or https:// URL")]
    Url { var: String, value: String },
    #[error(
        "{var}: {value:?} is not a protocol rounds exports with (http/protobuf or http/json; \
         rounds has no gRPC exporter: point it at the collector's OTLP/HTTP port, 4318)"
    )]
    Protocol { var: String, value: String },
    /// Names the variable only: its value is a secret.
    #[error("{var}: not a list of key=value pairs")]
    Headers { var: String },
}

const PREFIX: &str = "OTEL_EXPORTER_OTLP";

impl Config {
    /// The configuration from the environment (`env` reads a variable) and the user's
    /// `--otel-endpoint` (a base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`, which it overrides);
    /// `Ok(None)` when telemetry is off.
    pub fn read(
        env: &dyn Fn(&str) -> Option<String>,
        endpoint: Option<&str>,
        content: bool,
    ) -> Result<Option<Config>, ConfigError> {
        let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if get("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let base = match endpoint {
            Some(url) => Some(("--otel-endpoint".to_owned(), url.to_owned())),
            None => get(&format!("{PREFIX}_ENDPOINT")).map(|v| (format!("{PREFIX}_ENDPOINT"), v)),
        };
        let signal = |name: &str, path: &str| -> Result<Option<Signal>, ConfigError> {
            let upper = name.to_ascii_uppercase();
            if get(&format!("OTEL_{upper}_EXPORTER")).is_some_and(|v| v.trim() == "none") {
                return Ok(None);
            }
            let own = format!("{PREFIX}_{upper}_ENDPOINT");
            let (var, url) = match (endpoint, get(&own), &base) {
                (None, Some(url), _) => (own, url),
                (_, _, Some((var, base))) => (
                    var.clone(),
                    format!("{}/{path}", base.trim_end_matches('/')),
                ),
                (Some(_), ..) | (None, None, None) => return Ok(None),
            };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::Url { var, value: url });
            }
            Ok(Some(Signal {
                url,
                protocol: protocol(&get, &upper)?,
                headers: headers(&get, &upper)?,
            }))
        };
        let traces = signal("traces", "v1/traces")?;
        let metrics = signal("metrics", "v1/metrics")?;
        if traces.is_none() && metrics.is_none() {
            return Ok(None);
        }
        let mut resource = match get("OTEL_RESOURCE_ATTRIBUTES") {
            Some(list) => pairs(&list).unwrap_or_default(),
            None => Vec::new(),
        };
        let named = resource.iter().position(|(k, _)| k == "service.name");
        let from_resource = named.map(|i| resource.remove(i).1);
        let service_name = get("OTEL_SERVICE_NAME")
            .or(from_resource)
            .unwrap_or_else(|| "rounds".to_owned());
        Ok(Some(Config {
            traces,
            metrics,
            service_name,
            resource,
            content,
        }))
    }
}

/// A signal's protocol: its own variable, else the general one, else protobuf.
fn protocol(get: &dyn Fn(&str) -> Option<String>, signal: &str) -> Result<Protocol, ConfigError> {
    let own = format!("{PREFIX}_{signal}_PROTOCOL");
    let general = format!("{PREFIX}_PROTOCOL");
    let Some((var, value)) =
        (get(&own).map(|v| (own, v))).or_else(|| get(&general).map(|v| (general, v)))
    else {
        return Ok(Protocol::Protobuf);
    };
    match value.trim() {
        "http/protobuf" => Ok(Protocol::Protobuf),
        "http/json" => Ok(Protocol::Json),
        _ => Err(ConfigError::Protocol { var, value }),
    }
}

/// A signal's headers: the general variable's, then its own (which win for a name both give).
fn headers(
    get: &dyn Fn(&str) -> Option<String>,
    signal: &str,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut all: Vec<(String, String)> = Vec::new();
    for var in [
        format!("{PREFIX}_HEADERS"),
        format!("{PREFIX}_{signal}_HEADERS"),
    ] {
        let Some(list) = get(&var) else { continue };
        for (k, v) in pairs(&list).ok_or(ConfigError::Headers { var })? {
            all.retain(|(name, _)| !name.eq_ignore_ascii_case(&k));
            all.push((k, v));
        }
    }
    Ok(all)
}

/// `k=v,k2=v2` with percent-encoded values (the W3C baggage form the specification uses).
fn pairs(list: &str) -> Option<Vec<(String, String)>> {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let k = k.trim();
            (!k.is_empty()).then(|| (k.to_owned(), decode(v.trim())))
        })
        .collect()
}

fn decode(value: &str) -> String {
    // form_urlencoded decodes `+` as a space, which percent-encoding does not: keep it.
    let protected = value.replace('+', "%2B");
    form_urlencoded::parse(format!("v={protected}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Every header value the variables hold, decoded: what redaction must take out of any text.
pub fn header_secrets(env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    ["", "_TRACES", "_METRICS", "_LOGS"]
        .iter()
        .filter_map(|s| env(&format!("{PREFIX}{s}_HEADERS")))
        .flat_map(|list| pairs(&list).unwrap_or_default())
        .map(|(_, v)| v)
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    fn read(vars: &[(&str, &str)], flag: Option<&str>) -> Result<Option<Config>, ConfigError> {
        let env = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        };
        Config::read(&env, flag, false)
    }

    #[test]
    fn off_without_an_endpoint_or_when_disabled() {
        assert_eq!(read(&[], None).unwrap(), None);
        assert_eq!(read(&[("OTEL_SERVICE_NAME", "x")], None).unwrap(), None);
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")];
        assert!(read(&on, None).unwrap().is_some());
        let disabled = [on[0], ("OTEL_SDK_DISABLED", "TRUE")];
        assert_eq!(read(&disabled, None).unwrap(), None);
        assert_eq!(
            read(&[("OTEL_SDK_DISABLED", "true")], Some("http://c")).unwrap(),
            None
        );
    }

    #[test]
    fn the_base_endpoint_gets_each_signals_path_and_a_signals_own_is_used_as_it_is() {
        let config = read(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/"),
                (
                    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                    "https://m.example/ingest",
                ),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ],
            None,
        )
        .unwrap()
        .unwrap();
        let traces = config.traces.unwrap();
        assert_eq!(
            (traces.url.as_str(), traces.protocol),
            ("http://c:4318/v1/traces", Protocol::Protobuf)
        );
        let metrics = config.metrics.unwrap();
        assert_eq!(
            (metrics.url.as_str(), metrics.protocol),
            ("https://m.example/ingest", Protocol::Json)
        );
        // The user's flag overrides every endpoint variable.
        let flagged = read(
            &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t/x")],
            Some("http://mine:4318"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(flagged.traces.unwrap().url, "http://mine:4318/v1/traces");
        // One signal off.
        let no_metrics = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ];
        assert_eq!(read(&no_metrics, None).unwrap().unwrap().metrics, None);
    }

    #[test]
    fn headers_are_decoded_merged_and_never_printed() {
        let config = read(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "authorization=Bearer%20s3cr3t+x, x-team = a",
                ),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Team=b"),
            ],
            None,
        )
        .unwrap()
        .unwrap();
        let traces = config.traces.unwrap();
        assert_eq!(
            traces.headers,
            vec![
                ("authorization".to_owned(), "Bearer s3cr3t+x".to_owned()),
                ("X-Team".to_owned(), "b".to_owned())
            ]
        );
        assert_eq!(config.metrics.unwrap().headers[1].1, "a");
        let printed = format!("{traces:?}");
        assert!(
            !printed.contains("s3cr3t") && printed.contains("2 redacted"),
            "{printed}"
        );
    }

    #[test]
    fn what_otlp_cannot_use_is_an_error_that_names_the_variable_and_not_a_secret() {
        let bad_url = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")], None);
        assert!(
            matches!(bad_url, Err(ConfigError::Url { .. })),
            "{bad_url:?}"
        );
        let grpc = read(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ],
            None,
        )
        .unwrap_err();
        assert!(grpc.to_string().contains("4318"), "{grpc}");
        let headers = read(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "s3cr3t"),
            ],
            None,
        )
        .unwrap_err();
        assert_eq!(
            headers.to_string(),
            "OTEL_EXPORTER_OTLP_HEADERS: not a list of key=value pairs"
        );
    }

    #[test]
    fn the_service_and_resource_come_from_the_standard_variables() {
        let config = read(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "service.name=ci,deployment.environment=prod",
                ),
            ],
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(config.service_name, "ci");
        assert_eq!(
            config.resource,
            vec![("deployment.environment".to_owned(), "prod".to_owned())]
        );
        let env = |n: &str| (n == "OTEL_EXPORTER_OTLP_HEADERS").then(|| "a=x%2Cy,b=z".to_owned());
        assert_eq!(header_secrets(&env), vec!["x,y".to_owned(), "z".to_owned()]);
    }
}
