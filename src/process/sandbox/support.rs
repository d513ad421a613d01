//! What the running kernel can enforce of the sandbox ([`probe`]), and what a run records of
//! it in its transcript's `start` line ([`Summary`], [`Enforced`]).

use serde::{Deserialize, Serialize};

use super::Mode;
use super::git;
use super::seccomp;

/// What the running kernel can enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Support {
    /// The Landlock ABI version; 0 when the kernel has no Landlock (or it is disabled).
    pub landlock_abi: u32,
    /// Whether seccomp filters are available for this architecture and kernel.
    pub seccomp: bool,
    /// Whether a tool process can get a mount namespace of its own (for `.git` read-only).
    #[serde(default)]
    pub mount_namespace: bool,
}

impl Support {
    /// A kernel without Landlock or seccomp.
    #[cfg(test)]
    pub(crate) fn none() -> Support {
        Support {
            landlock_abi: 0,
            seccomp: false,
            mount_namespace: false,
        }
    }
}

/// What the kernel's Landlock is, for messages.
pub(super) fn kernel(landlock_abi: u32) -> String {
    match landlock_abi {
        0 => "this kernel has no Landlock".to_owned(),
        n => format!("this kernel has Landlock ABI {n}"),
    }
}

/// Asks the kernel what it supports (cheap: one system call and one small file read).
pub fn probe() -> Support {
    Support {
        landlock_abi: landlock_abi(),
        seccomp: seccomp::ARCH.is_some()
            && std::fs::read_to_string("/proc/self/status")
                .is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:"))),
        mount_namespace: git::can_unshare(),
    }
}

#[allow(unsafe_code)]
fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag,
    // landlock_create_ruleset(2) reads no memory and creates no file descriptor: it returns the
    // highest supported ABI version, or -1 (ENOSYS, EOPNOTSUPP) without Landlock.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).unwrap_or(0)
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
