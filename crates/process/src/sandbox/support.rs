//! What the running kernel can enforce of the sandbox ([`probe`]), what a run asks of it and
//! does about what is missing (`Sandbox::check`: a warning, or an error with `require`;
//! `Sandbox::check_git`: a `.git` no mount namespace can keep read-only refuses a run that
//! starts processes), and what a run records of it in its transcript's `start` line
//! ([`Summary`], [`Enforced`]).

use serde::{Deserialize, Serialize};

use std::path::PathBuf;

use super::git;
use super::seccomp;
use super::{Enforced, Mode, Sandbox, SandboxError};

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

/// What a sandbox asks of the kernel, and what the run does about what it cannot have.
impl Sandbox {
    /// The restrictions this sandbox asks for.
    fn wanted(&self) -> Enforced {
        let on = !self.is_off();
        Enforced {
            filesystem: on,
            network_tcp: on && !self.network,
            network_other: on && !self.network,
            processes: on,
            signals: on,
            abstract_unix_sockets: on,
            git_read_only: Some(on),
        }
    }

    /// The restrictions in force for tool processes on a kernel that supports `support`.
    pub(crate) fn enforced(&self, support: Support) -> Enforced {
        let wanted = self.wanted();
        let abi = support.landlock_abi;
        Enforced {
            filesystem: wanted.filesystem && abi >= 3,
            network_tcp: wanted.network_tcp && abi >= 4,
            network_other: wanted.network_other && support.seccomp,
            processes: wanted.processes && abi >= 1,
            signals: wanted.signals && abi >= 6,
            abstract_unix_sockets: wanted.abstract_unix_sockets && abi >= 6,
            // Nothing is writable in read-only mode; in workspace-write the mounts need a
            // namespace, and mean something only where Landlock confines writes at all.
            git_read_only: Some(
                wanted.git_read_only == Some(true)
                    && abi >= 3
                    && (self.mode == Mode::ReadOnly || support.mount_namespace),
            ),
        }
    }

    /// What this sandbox asks for that the kernel cannot give, each as a short phrase.
    pub fn missing(&self, support: Support) -> Vec<String> {
        let wanted = self.wanted();
        let got = self.enforced(support);
        let abi = support.landlock_abi;
        let mut missing = Vec::new();
        if wanted.filesystem && !got.filesystem {
            missing.push(if abi == 0 {
                "filesystem writes (Landlock)".to_owned()
            } else {
                "truncating files outside the writable directories (Landlock ABI 3)".to_owned()
            });
        }
        if wanted.network_tcp && !got.network_tcp {
            missing.push("TCP connect and bind (Landlock ABI 4)".to_owned());
        }
        if wanted.network_other && !got.network_other {
            missing.push("UDP and other non-TCP sockets (seccomp)".to_owned());
        }
        if !self.is_off() && !support.seccomp {
            missing.push("setuid and setgid modes, and chown (seccomp)".to_owned());
        }
        if self.mode == Mode::WorkspaceWrite && !support.mount_namespace {
            missing.push(
                ".git read-only below the writable directories (a mount namespace: rounds \
                 needs CAP_SYS_ADMIN or unprivileged user namespaces)"
                    .to_owned(),
            );
        }
        if wanted.processes && !got.processes {
            missing.push(
                "reading the memory and environment of other processes of the same user \
                 (Landlock)"
                    .to_owned(),
            );
        }
        if wanted.signals && !got.signals {
            missing.push(
                "signals to processes outside the tool, such as rounds and its supervisor \
                 (Landlock ABI 6)"
                    .to_owned(),
            );
        }
        if wanted.abstract_unix_sockets && !got.abstract_unix_sockets {
            missing.push("abstract UNIX sockets (Landlock ABI 6)".to_owned());
        }
        missing
    }

    /// What the run must do about the kernel's support: `Ok(None)` all is enforced (or the
    /// sandbox is off), `Ok(Some(warning))` print this once on stderr and go on,
    /// `Err` with `require`: a usage error (exit 2) before any model call.
    pub fn check(&self, support: Support) -> Result<Option<String>, SandboxError> {
        let missing = self.missing(support);
        if missing.is_empty() {
            return Ok(None);
        }
        if self.require {
            return Err(SandboxError::Unenforceable {
                landlock_abi: support.landlock_abi,
                missing,
            });
        }
        Ok(Some(format!(
            "warning: the tool sandbox ({}) is degraded: {}, so it does not enforce: {}. Use \
             --sandbox require to make this an error.",
            self.mode.name(),
            kernel(support.landlock_abi),
            missing.join("; ")
        )))
    }

    /// A `.git` a tool could write, below the workspace or a `--sandbox-write` directory,
    /// where Landlock confines writes but no mount namespace can keep it read-only: the run is
    /// refused (issue 31: a warning would leave the hole open in exactly the CI step that
    /// commits the fix). The temp dir is not searched for this: repositories there are not the
    /// run's, and the warning names the gap.
    /// Asked only of a run that may start tool processes (a run that only reads files through
    /// built-in tools has nothing to refuse).
    pub fn check_git(&self, support: Support) -> Result<(), SandboxError> {
        if self.mode != Mode::WorkspaceWrite || support.mount_namespace || support.landlock_abi == 0
        {
            return Ok(());
        }
        let temp = std::env::temp_dir();
        let temp = std::fs::canonicalize(&temp).unwrap_or(temp);
        let roots: Vec<PathBuf> = self.write.iter().filter(|w| **w != temp).cloned().collect();
        let found = git::find(&roots).unwrap_or_else(|partial| partial);
        match found.into_iter().next() {
            Some(git) => Err(SandboxError::GitUnprotected(git.path)),
            None => Ok(()),
        }
    }
}
