//! The sandbox of tool processes as a run records it (the `start` line's `sandbox`): the mode
//! asked for and what the kernel enforced. `process::sandbox` builds and applies it; these are
//! only the records, so the transcript needs nothing of the machinery.

use serde::{Deserialize, Serialize};

/// The `--sandbox` modes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// No sandbox: tool processes can do whatever rounds' user can.
    Off,
    /// No writes at all (but `/dev/null` and friends).
    ReadOnly,
    /// Writes only below the writable directories.
    #[default]
    WorkspaceWrite,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::ReadOnly => "read-only",
            Mode::WorkspaceWrite => "workspace-write",
        }
    }
}

/// Which restrictions are in force for tool processes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[schemars(deny_unknown_fields)]
pub struct Enforced {
    /// Writes outside the writable directories are refused, truncation included.
    pub filesystem: bool,
    /// TCP connect and bind are refused.
    pub network_tcp: bool,
    /// Sockets other than UNIX and TCP (UDP, raw, packet, netlink…) cannot be created.
    pub network_other: bool,
    /// Processes outside the tool cannot be ptraced (so neither their `/proc/PID/environ` and
    /// `mem` read).
    pub processes: bool,
    /// Processes outside the tool cannot be signalled.
    pub signals: bool,
    /// Abstract UNIX sockets created outside the tool cannot be connected to.
    pub abstract_unix_sockets: bool,
    /// Every `.git` below the writable directories is read-only to tools (a mount namespace;
    /// in `read-only` mode, Landlock). Always written; absent only in transcripts of rounds
    /// before it, which still match the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_read_only: Option<bool>,
}

/// The OS sandbox of tool processes, and what the kernel enforced of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Summary {
    /// `--sandbox`.
    pub mode: Mode,
    /// `--sandbox require`.
    pub required: bool,
    /// The kernel's Landlock ABI version, 0 without Landlock.
    pub landlock_abi: u32,
    /// Whether bash and hooks may use the network (`--tool-network`, or the sandbox is off).
    pub network: bool,
    /// The writable directories (`["/"]` when off: whatever the user may write).
    pub write: Vec<String>,
    pub enforced: Enforced,
}
