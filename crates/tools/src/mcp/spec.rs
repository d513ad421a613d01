//! Which MCP servers to start: `--mcp "NAME=COMMAND ARGS…"` flags and `--mcp-config` files,
//! both turned into the same `ServerSpec`, and the names the servers' tools get.
//!
//! Server names become the prefix of tool names that providers see (`NAME__TOOL`), so they are
//! held to the characters every provider accepts, and must be unique: two servers under one
//! name would make every allow rule on that name ambiguous.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::McpError;

/// Longest tool name the provider APIs accept.
pub(crate) const MAX_TOOL_NAME: usize = 64;

/// What is wrong with a server's name.
#[derive(Debug, thiserror::Error)]
pub enum NameError {
    #[error("the server name is empty")]
    Empty,
    #[error("the server name {name:?} has {bad:?}; use only letters, digits, '_' and '-'")]
    Character { name: String, bad: char },
}

/// What is wrong with an `--mcp` value.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    #[error("expected NAME=COMMAND ARGS…")]
    NoName,
    #[error(transparent)]
    Name(#[from] NameError),
    #[error("cannot split: {0}")]
    Split(#[source] shell_words::ParseError),
    #[error("the command is empty")]
    EmptyCommand,
}

/// What is wrong with an `--mcp-config` file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Read(#[source] std::io::Error),
    #[error(
        "{0} (expected {{\"mcpServers\": {{\"NAME\": {{\"command\": …, \"args\": […], \"env\": \
         {{…}}}}}}}})"
    )]
    Json(#[source] serde_json::Error),
    #[error("server {server:?}: {problem}")]
    Server {
        server: String,
        #[source]
        problem: EntryError,
    },
}

/// What is wrong with one server's entry in a config file.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(
        "only stdio servers are supported (an entry with \"command\"), not HTTP or SSE servers \
         given by \"url\""
    )]
    Remote,
    #[error("\"command\" is missing")]
    NoCommand,
}

/// One server to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerSpec {
    pub(crate) name: String,
    /// Program and arguments.
    pub(crate) argv: Vec<String>,
    /// Set on top of the scrubbed tool environment.
    pub(crate) env: Vec<(String, String)>,
    /// `"network": true` in its config entry: the sandbox lets it use the network
    /// (`--tool-network` is for bash and hooks). Servers from `--mcp` flags have none.
    pub(crate) network: bool,
}

/// Every server of the flags and the config file, flags first, names checked for uniqueness.
pub(crate) fn collect(
    flags: &[String],
    config: Option<&Path>,
) -> Result<Vec<ServerSpec>, McpError> {
    let mut specs = flags
        .iter()
        .map(|f| parse_flag(f))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(path) = config {
        let config_error = |reason| McpError::Config {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| config_error(ConfigError::Read(e)))?;
        specs.extend(parse_config(&text).map_err(config_error)?);
    }
    let mut seen = HashSet::new();
    for spec in &specs {
        if !seen.insert(spec.name.as_str()) {
            return Err(McpError::Duplicate(spec.name.clone()));
        }
    }
    Ok(specs)
}

/// `NAME=COMMAND ARGS…`: the name up to the first `=`, the rest split as a shell would (quotes
/// and backslashes, no expansion).
pub(crate) fn parse_flag(value: &str) -> Result<ServerSpec, McpError> {
    let bad = |reason| McpError::Flag {
        value: value.to_owned(),
        reason,
    };
    let (name, command) = value
        .split_once('=')
        .ok_or_else(|| bad(FlagError::NoName))?;
    check_name(name).map_err(|e| bad(e.into()))?;
    let argv = shell_words::split(command).map_err(|e| bad(FlagError::Split(e)))?;
    if argv.is_empty() {
        return Err(bad(FlagError::EmptyCommand));
    }
    Ok(ServerSpec {
        name: name.to_owned(),
        argv,
        env: Vec::new(),
        network: false,
    })
}

#[derive(Debug, Deserialize)]
struct ConfigFile {
    /// `servers` is what some editors call it.
    #[serde(rename = "mcpServers", alias = "servers")]
    servers: BTreeMap<String, ConfigEntry>,
}

/// One entry; keys other clients use (`type`, `timeout`, …) are accepted and ignored.
#[derive(Debug, Deserialize)]
struct ConfigEntry {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    disabled: bool,
    /// rounds' own key: the server may use the network in the sandbox.
    #[serde(default)]
    network: bool,
}

/// The servers of a config file's text, in name order; disabled entries are left out.
pub(crate) fn parse_config(text: &str) -> Result<Vec<ServerSpec>, ConfigError> {
    let file: ConfigFile = serde_json::from_str(text).map_err(ConfigError::Json)?;
    let mut specs = Vec::new();
    for (name, entry) in file.servers {
        if entry.disabled {
            continue;
        }
        let server = |problem| ConfigError::Server {
            server: name.clone(),
            problem,
        };
        check_name(&name).map_err(|e| server(e.into()))?;
        let remote = entry.url.is_some()
            || entry
                .kind
                .as_deref()
                .is_some_and(|k| !k.eq_ignore_ascii_case("stdio"));
        let command = match entry.command {
            Some(c) if !c.is_empty() => c,
            _ if remote => return Err(server(EntryError::Remote)),
            _ => return Err(server(EntryError::NoCommand)),
        };
        let mut argv = vec![command];
        argv.extend(entry.args);
        specs.push(ServerSpec {
            name,
            argv,
            env: entry.env.into_iter().collect(),
            network: entry.network,
        });
    }
    Ok(specs)
}

fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        Some(bad) => Err(NameError::Character {
            name: name.to_owned(),
            bad,
        }),
        None => Ok(()),
    }
}

/// Gives each tool of each server a name providers accept: `SERVER__TOOL` with every other
/// character replaced by `_`, cut to 64 characters, and made unique with a `_2`, `_3`, … suffix
/// when cutting or replacing made two names equal.
#[derive(Default)]
pub(crate) struct Namer {
    taken: HashSet<String>,
}

impl Namer {
    pub(crate) fn name(&mut self, server: &str, tool: &str) -> String {
        let base: String = format!("{server}__{tool}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        // Only ASCII is left, so byte and character counts agree.
        let mut name = cut(&base, MAX_TOOL_NAME).to_owned();
        let mut n = 2;
        while self.taken.contains(&name) {
            let suffix = format!("_{n}");
            name = format!("{}{suffix}", cut(&base, MAX_TOOL_NAME - suffix.len()));
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

fn cut(s: &str, max: usize) -> &str {
    &s[..s.len().min(max)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn spec(name: &str, argv: &[&str], env: &[(&str, &str)]) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            network: false,
        }
    }

    #[test]
    fn flags_split_at_the_first_equals_then_like_a_shell() {
        assert_eq!(
            parse_flag("fs=npx -y @mcp/server-fs /tmp").unwrap(),
            spec("fs", &["npx", "-y", "@mcp/server-fs", "/tmp"], &[])
        );
        assert_eq!(
            parse_flag(r#"my-srv_2=python3 -c "print('a=b')" 'x y' z\ w"#).unwrap(),
            spec(
                "my-srv_2",
                &["python3", "-c", "print('a=b')", "x y", "z w"],
                &[]
            )
        );
        assert_eq!(
            parse_flag("a=srv --opt=1").unwrap().argv,
            ["srv", "--opt=1"],
            "later '=' belong to the command"
        );
    }

    #[test]
    fn bad_flags_are_refused_with_the_reason() {
        let err = |v: &str| parse_flag(v).unwrap_err().to_string();
        assert!(
            err("no-equals").contains("expected NAME=COMMAND"),
            "{}",
            err("x")
        );
        assert!(err("=srv").contains("name is empty"));
        assert!(err("a.b=srv").contains("'.'"), "{}", err("a.b=srv"));
        assert!(err("a b=srv").contains("' '"));
        assert!(err("a=").contains("command is empty"));
        assert!(err("a=   ").contains("command is empty"));
        assert!(
            err("a=srv 'open").contains("cannot split"),
            "{}",
            err("a=srv 'open")
        );
        assert!(err("a=srv 'open").starts_with("--mcp \"a=srv 'open\": "));
    }

    #[test]
    fn config_files_take_the_common_shape_and_skip_disabled_entries() {
        let text = r#"{"mcpServers": {
            "zeta": {"command": "z", "args": ["-v", "a b"], "env": {"K": "V", "A": "1"}, "type": "stdio"},
            "alpha": {"command": "a", "timeout": 5, "autoApprove": []},
            "off": {"command": "nope", "disabled": true},
            "off-remote": {"url": "http://x", "disabled": true}
        }, "other": 1}"#;
        assert_eq!(
            parse_config(text).unwrap(),
            [
                spec("alpha", &["a"], &[]),
                spec("zeta", &["z", "-v", "a b"], &[("A", "1"), ("K", "V")]),
            ]
        );
        assert_eq!(
            parse_config(r#"{"servers": {"s": {"command": "x"}}}"#).unwrap(),
            [spec("s", &["x"], &[])]
        );
        let networked = parse_config(r#"{"servers": {"s": {"command": "x", "network": true}}}"#);
        assert!(
            networked.unwrap()[0].network,
            "an entry may ask for the network"
        );
    }

    #[test]
    fn config_errors_name_the_server_and_what_is_wrong() {
        let err = |t: &str| parse_config(t).unwrap_err().to_string();
        let remote = err(r#"{"mcpServers": {"web": {"url": "https://x/mcp"}}}"#);
        assert!(
            remote.contains("server \"web\": only stdio servers are supported"),
            "{remote}"
        );
        let typed = err(r#"{"mcpServers": {"web": {"type": "http"}}}"#);
        assert!(typed.contains("only stdio"), "{typed}");
        let missing = err(r#"{"mcpServers": {"x": {"args": []}}}"#);
        assert!(
            missing.contains("server \"x\": \"command\" is missing"),
            "{missing}"
        );
        assert!(err(r#"{"mcpServers": {"a.b": {"command": "x"}}}"#).contains("'.'"));
        assert!(err(r#"{"servers_typo": {}}"#).contains("expected {\"mcpServers\""));
        assert!(err("not json").contains("expected"));
        assert!(err(r#"{"mcpServers": {"x": {"command": 1}}}"#).contains("invalid type"));
    }

    #[test]
    fn names_must_be_unique_across_flags_and_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap();
        let all = collect(&["b=y".into()], Some(&path)).unwrap();
        let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["b", "a"]);
        let dup = collect(&["a=y".into()], Some(&path))
            .unwrap_err()
            .to_string();
        assert_eq!(dup, "MCP server a is defined more than once");
        let dup = collect(&["a=y".into(), "a=z".into()], None).unwrap_err();
        assert!(matches!(dup, McpError::Duplicate(_)));
        let missing = collect(&[], Some(&dir.path().join("nope.json"))).unwrap_err();
        assert!(
            missing.to_string().starts_with("--mcp-config "),
            "{missing}"
        );
    }

    #[test]
    fn tool_names_are_sanitized_cut_and_made_unique() {
        let mut namer = Namer::default();
        assert_eq!(namer.name("fs", "read_file"), "fs__read_file");
        assert_eq!(namer.name("fs", "dotted.name/x"), "fs__dotted_name_x");
        assert_eq!(namer.name("fs", "dotted_name_x"), "fs__dotted_name_x_2");
        assert_eq!(namer.name("fs", "dotted name x"), "fs__dotted_name_x_3");
        assert_eq!(namer.name("s", "ünï"), "s___n_", "each char is one '_'");
        let long = "t".repeat(100);
        let first = namer.name("srv", &long);
        assert_eq!(first.len(), MAX_TOOL_NAME);
        assert!(first.starts_with("srv__ttt"));
        let second = namer.name("srv", &format!("{long}x"));
        assert_eq!(second.len(), MAX_TOOL_NAME);
        assert!(second.ends_with("t_2"), "{second}");
    }
}
