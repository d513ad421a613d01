//! The OS sandbox of tool processes (Linux Landlock, plus seccomp filters): what the allowlist
//! lets run is still bounded in what it can do.
//!
//! # What it enforces
//! Every tool process (bash, command tools, hooks, MCP servers) starts through the supervisor
//! (`process::supervisor`). When the sandbox is on, the supervisor builds the rules before it
//! spawns the command and the child enters them between `fork` and `exec`, so the command and
//! everything it starts live in one Landlock domain of their own:
//! - filesystem: read and execute everywhere; write only below the writable directories (mode
//!   `workspace-write`: the workspace, the temp dir and each `--sandbox-write DIR`, each pinned
//!   to what it was before any tool ran), or nowhere (`read-only`). `/dev/null`, `/dev/zero` and `/dev/full`
//!   stay writable in both, so `2>/dev/null` works. Device files cannot be made anywhere
//!   (Landlock's `MAKE_CHAR` and `MAKE_BLOCK` are granted nowhere, and the supervisor drops
//!   `CAP_MKNOD`): a block device in the workspace would reach the whole disk.
//! - file attributes, which Landlock does not cover: a seccomp filter refuses setuid and setgid
//!   modes and every `chown` (`process::seccomp`), and the supervisor drops the capabilities
//!   that let root change what it does not own.
//! - network, unless allowed: TCP `connect`/`bind` refused (Landlock ABI 4), and a seccomp filter
//!   refuses every other socket (UDP, raw, packet, netlink…: only UNIX and TCP sockets can be
//!   created) and `io_uring` (which could create sockets behind the filter's back).
//! - `.git` below a writable directory: read-only, through a mount namespace of the child's own
//!   (`sandbox::git`): Landlock cannot take back a part of what it grants.
//! - other processes' limits, priorities and affinity, keyrings, SysV IPC, mounts and
//!   namespaces: seccomp filters (`process::seccomp`), and an IPC namespace where possible.
//! - other processes: a domain cannot ptrace, so cannot read `/proc/PID/environ` or `mem` of,
//!   any process outside it, whatever the user ids (Landlock ABI 1); with ABI 6 it cannot signal
//!   them either (so a tool cannot `kill -9` or `SIGSTOP` its supervisor or rounds) nor connect
//!   to abstract UNIX sockets created outside it.
//!
//! # Why the child and not the supervisor
//! The supervisor stays outside the domain: it must signal, inspect (`/proc`) and reap the
//! tree, and the tool must not be able to signal or ptrace it, which a shared domain would
//! allow. The rules are built in the supervisor (allocation, opening the directories) and only
//! entered in the `pre_exec` hook: a few system calls (`unshare` and the `.git` mounts, then
//! `prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self`, `seccomp`). The supervisor is single-threaded when it spawns, so the
//! forked child cannot inherit a lock held by another thread.
//!
//! # How the supervisor learns it
//! Through the environment variable [`SUPERVISOR_ENV`] ([`Sandbox::to_env`]), which the
//! supervisor removes from the program's environment: a command line is readable by every user
//! (`/proc/PID/cmdline`), and the writable directories are no one else's business.
//!
//! # How a run uses it
//! `config::sandbox` turns `--sandbox`, `--sandbox-write` and `--tool-network` into the run's
//! [`Sandbox`] ([`parse_flag`], [`Sandbox::check_dirs`], [`Sandbox::for_run`]), asks the kernel
//! what it can enforce ([`probe`], [`Sandbox::check`]: a warning said once, or with `require` a
//! usage error before any model call), and keeps [`Sandbox::summary`] for the transcript's
//! `start` line. A directory rounds creates for itself can be pinned ([`Sandbox::pin`]). The
//! sandbox then travels in `pipeline::Settings` (bash, command tools, hooks) and
//! `ProcessContext` (MCP servers). Bash and hooks follow `--tool-network`; a command tool or an
//! MCP server gets the network only with `network = true` in its own entry.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::pin::{Pin, PinError};
use super::seccomp;

pub(crate) mod git;
mod survey;

pub use survey::Survey;
mod support;

pub use crate::transcript::sandbox::{Enforced, Mode, Summary};
use support::kernel;
pub use support::{Support, probe};

/// The environment variable that carries the sandbox to the supervisor ([`Sandbox::to_env`]).
pub const SUPERVISOR_ENV: &str = "ROUNDS_SUPERVISOR_SANDBOX";

/// The values `--sandbox` accepts, for help texts and completions.
pub const FLAG_VALUES: &[&str] = &["workspace-write", "read-only", "off", "require"];

/// What is wrong with the sandbox a run asks for: a usage error, before any model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    #[error("unknown sandbox mode {0:?} (expected one of: {values})", values = FLAG_VALUES.join(", "))]
    UnknownMode(String),
    #[error("--sandbox-write {}: not an existing directory", .0.display())]
    NotADirectory(PathBuf),
    /// `--sandbox require` on a kernel that cannot enforce all of it.
    #[error(
        "--sandbox require: {}, so the tool sandbox cannot enforce: {}",
        kernel(*.landlock_abi),
        .missing.join("; ")
    )]
    Unenforceable {
        landlock_abi: u32,
        /// What cannot be enforced, each as a short phrase ([`Sandbox::missing`]).
        missing: Vec<String>,
    },
    /// In every mode but `off`: a repository's `.git` below the workspace (or a
    /// `--sandbox-write` directory) would be writable, and no mount namespace can be had to
    /// keep it read-only.
    #[error(
        "the tool sandbox cannot keep {} read-only here: that needs a mount namespace, and          rounds has no CAP_SYS_ADMIN and this system allows no unprivileged user namespaces          (Ubuntu: kernel.apparmor_restrict_unprivileged_userns=1). A tool that writes there (a          hook, core.fsmonitor) has your next git command run its code outside the sandbox. Let          tools write it knowingly with --sandbox-write {}, use --sandbox read-only, or run          where user namespaces are allowed (or as root in a throwaway container)",
        .0.display(),
        .0.display()
    )]
    GitUnprotected(PathBuf),
}

/// The supervisor cannot read the sandbox it was given in [`SUPERVISOR_ENV`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EnvError {
    #[error("not text")]
    NotText,
    #[error("bad sandbox mode in {0:?}")]
    Mode(String),
    #[error("bad sandbox option {0:?}")]
    Option(String),
}

/// Why the rules of a child could not be built: the program is not started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfineError {
    #[error(transparent)]
    Pin(#[from] PinError),
    #[error("Landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("seccomp: {0}")]
    Seccomp(#[from] seccomp::FilterError),
    /// The walk for `.git` directories stopped at its limit: the command does not start.
    #[error(
        "more than {} directories below the writable directories: cannot find every .git to \
         keep read-only",
        git::WALK_LIMIT
    )]
    TooManyDirectories,
}

/// Parses a `--sandbox` value: the mode and whether it is required (`require`).
pub fn parse_flag(value: &str) -> Result<(Mode, bool), SandboxError> {
    match value {
        "off" => Ok((Mode::Off, false)),
        "read-only" => Ok((Mode::ReadOnly, false)),
        "workspace-write" => Ok((Mode::WorkspaceWrite, false)),
        "require" => Ok((Mode::WorkspaceWrite, true)),
        other => Err(SandboxError::UnknownMode(other.to_owned())),
    }
}

/// Files that stay writable in every confined mode: sinks and sources, not storage.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// The sandbox of tool processes: for a run, or for one process (see `with_network`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub mode: Mode,
    /// `--sandbox require`: what the kernel cannot enforce is an error, not a warning; the
    /// supervisor then also refuses to start a command it cannot confine completely.
    pub require: bool,
    /// Every writable directory (used in `workspace-write` only). Directories that do not exist
    /// when a command starts are left out: that only takes rights away.
    pub write: Vec<PathBuf>,
    /// Whether tool processes may use the network.
    pub network: bool,
    /// Writable directories granted only while they are the directory rounds created
    /// ([`Sandbox::pin`]); each is also in `write`.
    pub pins: Vec<Pin>,
    /// The temp dir's `.git` directories, found before any tool ran
    /// ([`Sandbox::survey_temp`]).
    pub surveyed: Survey,
}

impl Default for Sandbox {
    /// No sandbox: what code that does not know the run's sandbox gets (tests, tools run
    /// outside the pipeline).
    fn default() -> Sandbox {
        Sandbox::off()
    }
}

impl Sandbox {
    pub fn off() -> Sandbox {
        Sandbox::new(Mode::Off)
    }

    /// A sandbox of `mode` with no writable directory and no network.
    pub fn new(mode: Mode) -> Sandbox {
        Sandbox {
            mode,
            require: false,
            write: Vec::new(),
            network: false,
            pins: Vec::new(),
            surveyed: Survey::default(),
        }
    }

    /// The run's sandbox from the flags: the writable directories are the workspace, the
    /// system temp dir, then `extra_write` (`--sandbox-write`). The run's outputs directory is
    /// not among them: rounds writes it, tools only read it.
    pub fn for_run(
        (mode, require): (Mode, bool),
        workspace: &Path,
        extra_write: &[PathBuf],
        network: bool,
    ) -> Sandbox {
        let mut write = Vec::new();
        // Resolved, so it can be pinned (see `pin`): `$TMPDIR` may name a link.
        let temp = std::env::temp_dir();
        let temp = std::fs::canonicalize(&temp).unwrap_or(temp);
        for dir in [workspace, temp.as_path()]
            .into_iter()
            .chain(extra_write.iter().map(PathBuf::as_path))
        {
            if !write.iter().any(|w: &PathBuf| w == dir) {
                write.push(dir.to_owned());
            }
        }
        Sandbox {
            mode,
            require,
            write,
            network,
            pins: Vec::new(),
            surveyed: Survey::default(),
        }
    }

    /// Pins every writable directory to what it is now (see [`Sandbox::pin`]): called before
    /// any tool runs. A directory whose path is not its resolved path (a link in it) is not
    /// pinned: the walk would refuse it.
    pub fn pin_all(&mut self) {
        use std::os::unix::fs::MetadataExt;
        for dir in self.write.clone() {
            let real = std::fs::canonicalize(&dir);
            if let (Ok(real), Ok(meta)) = (real, std::fs::metadata(&dir))
                && real == dir
            {
                self.pin(&dir, meta.dev(), meta.ino());
            }
        }
    }

    /// Makes `dir` writable (if it is not already) only while it is the directory whose
    /// identity (`st_dev`, `st_ino`) rounds recorded when it created it. The supervisor then
    /// reaches it without following any symlink, checks the identity, and grants the directory it
    /// opened; if `dir` was replaced (by a symlink, in any component, or another directory) it
    /// refuses to start the program (exit 126). `dir` must be absolute, without `..`. Pinning
    /// the same directory again replaces its identity.
    pub fn pin(&mut self, dir: &Path, dev: u64, ino: u64) {
        if !self.write.iter().any(|w| w == dir) {
            self.write.push(dir.to_owned());
        }
        self.pins.retain(|p| p.dir != dir);
        self.pins.push(Pin {
            dir: dir.to_owned(),
            dev,
            ino,
        });
    }

    pub fn is_off(&self) -> bool {
        self.mode == Mode::Off
    }

    /// The same sandbox with the network allowed or not: for a command tool or an MCP server,
    /// whose own entry decides (`network = true`), not `--tool-network`.
    pub fn with_network(&self, network: bool) -> Sandbox {
        Sandbox {
            network,
            ..self.clone()
        }
    }

    /// `--sandbox-write` directories must exist (Landlock rules hold open directories); the
    /// message names the first that does not.
    pub fn check_dirs(extra_write: &[PathBuf]) -> Result<(), SandboxError> {
        match extra_write.iter().find(|dir| !dir.is_dir()) {
            Some(dir) => Err(SandboxError::NotADirectory(dir.clone())),
            None => Ok(()),
        }
    }

    /// The `"sandbox"` field of the transcript's `start` line.
    pub fn summary(&self, support: Support) -> Summary {
        Summary {
            mode: self.mode,
            required: self.require,
            landlock_abi: support.landlock_abi,
            network: self.is_off() || self.network,
            write: match self.mode {
                Mode::WorkspaceWrite => {
                    self.write.iter().map(|p| p.display().to_string()).collect()
                }
                Mode::ReadOnly => Vec::new(),
                // Everything the user can write.
                Mode::Off => vec!["/".to_owned()],
            },
            enforced: self.enforced(support),
        }
    }

    /// The value of [`SUPERVISOR_ENV`] for this sandbox; `None` when it is off. Words separated
    /// by spaces: the mode, then `require`, `network`, `write=HEX`, `pin=HEX,DEV,INO` and the
    /// survey's words ([`Survey`]) (paths in hexadecimal: any byte but NUL can be in one).
    pub fn to_env(&self) -> Option<OsString> {
        if self.is_off() {
            return None;
        }
        let mut words = vec![self.mode.name().to_owned()];
        if self.require {
            words.push("require".to_owned());
        }
        if self.network {
            words.push("network".to_owned());
        }
        if self.mode == Mode::WorkspaceWrite {
            words.extend(self.write.iter().map(|d| format!("write={}", hex(d))));
            words.extend(
                (self.pins.iter()).map(|p| format!("pin={},{},{}", hex(&p.dir), p.dev, p.ino)),
            );
            words.extend(self.surveyed.words());
        }
        Some(words.join(" ").into())
    }

    /// Reads what [`Sandbox::to_env`] wrote.
    pub(crate) fn from_env(value: &OsStr) -> Result<Sandbox, EnvError> {
        let value = value.to_str().ok_or(EnvError::NotText)?;
        let mut words = value.split(' ');
        let mut sandbox = match words.next() {
            Some("read-only") => Sandbox::new(Mode::ReadOnly),
            Some("workspace-write") => Sandbox::new(Mode::WorkspaceWrite),
            _ => return Err(EnvError::Mode(value.to_owned())),
        };
        for word in words {
            let bad = || EnvError::Option(word.to_owned());
            match word.split_once('=') {
                None if word == "require" => sandbox.require = true,
                None if word == "network" => sandbox.network = true,
                Some(("write", dir)) => sandbox.write.push(unhex(dir).ok_or_else(bad)?),
                Some(("pin", pin)) => {
                    let (dir, dev, ino) = identified(pin).ok_or_else(bad)?;
                    sandbox.pins.push(Pin { dir, dev, ino });
                }
                Some((key, value)) if sandbox.surveyed.read(key, value)? => {}
                _ => return Err(bad()),
            }
        }
        Ok(sandbox)
    }

    /// Builds the rules for a child process (in the supervisor, before it spawns); `None` when
    /// the sandbox is off. With `require`, anything the kernel cannot enforce is an error; a
    /// pinned directory that was replaced is one in every mode.
    pub(crate) fn prepare(&self) -> Result<Option<Confinement>, ConfineError> {
        if self.is_off() {
            return Ok(None);
        }
        let pinned = self.open_pins()?;
        let shield = match self.mode {
            // Where the run was told there is no namespace to be had, the child does not try
            // (a user namespace half made is worse than none); required, it tries and fails.
            Mode::WorkspaceWrite if !self.require && !git::can_unshare() => {
                Some(git::Shield::new(&[]))
            }
            Mode::WorkspaceWrite => match self.git_dirs() {
                Ok(found) => Some(git::Shield::new(&found)),
                // In every mode, not only required: a tool can grow a tree past the limit on
                // purpose, and a best effort would then leave a `.git` it hid writable.
                Err(_) => return Err(ConfineError::TooManyDirectories),
            },
            // Nothing is writable: Landlock keeps every `.git` as it is (the shield still
            // gives the tool its own SysV IPC).
            Mode::ReadOnly | Mode::Off => Some(git::Shield::new(&[])),
        };
        let ruleset = landlock_rules(self, pinned)?;
        // Best effort leaves the filters out where the kernel has no seccomp (the run warned);
        // required, they go in and the command does not start without them.
        let mut filters = Vec::new();
        let mut ipc_filter = None;
        if self.require || probe().seccomp {
            filters.push(seccomp::file_owner_filter()?);
            filters.push(seccomp::namespace_filter()?);
            filters.push(seccomp::process_filter()?);
            filters.push(seccomp::openat2_filter()?);
            ipc_filter = Some(seccomp::ipc_filter()?);
            if !self.network {
                filters.push(seccomp::socket_filter()?);
            }
        }
        Ok(Some(Confinement {
            shield,
            require: self.require,
            ruleset: Some(ruleset),
            filters,
            ipc_filter,
        }))
    }

    /// The pinned directories that still exist, opened; an error if one was replaced.
    fn open_pins(&self) -> Result<Vec<std::os::fd::OwnedFd>, PinError> {
        if self.mode != Mode::WorkspaceWrite {
            return Ok(Vec::new());
        }
        let mut opened = Vec::new();
        for pin in &self.pins {
            opened.extend(pin.open()?);
        }
        Ok(opened)
    }
}

/// The rules of one child, built and ready to enter.
pub(crate) struct Confinement {
    /// The `.git` paths to make read-only, if any.
    shield: Option<git::Shield>,
    require: bool,
    ruleset: Option<landlock::RulesetCreated>,
    filters: Vec<seccompiler::BpfProgram>,
    /// Entered only when the child has no IPC namespace of its own.
    ipc_filter: Option<seccompiler::BpfProgram>,
}

impl Confinement {
    /// Puts the calling thread (the child, between fork and exec) into the sandbox. Sets
    /// `PR_SET_NO_NEW_PRIVS` (Landlock and seccomp both require it): setuid programs do not
    /// gain privileges in a sandboxed tool. Makes system calls only: no allocation unless it
    /// fails.
    pub(crate) fn enter(&mut self) -> std::io::Result<()> {
        // First: Landlock forbids mounting, and the seccomp filter refuses it.
        let mut ipc_private = false;
        if let Some(shield) = &self.shield {
            match shield.enter(&mut ipc_private) {
                Ok(()) => {}
                Err(git::Failure::Unavailable(e)) if self.require => return Err(e),
                Err(git::Failure::Unavailable(_)) => {}
                Err(git::Failure::Broken(e)) => return Err(e),
            }
        }
        if let Some(ruleset) = self.ruleset.take() {
            ruleset.restrict_self().map_err(std::io::Error::other)?;
        }
        for filter in &self.filters {
            seccompiler::apply_filter(filter).map_err(std::io::Error::other)?;
        }
        if let Some(filter) = &self.ipc_filter
            && !ipc_private
        {
            seccompiler::apply_filter(filter).map_err(std::io::Error::other)?;
        }
        Ok(())
    }
}

/// The Landlock ABI whose features rounds asks for: the newest it is tested against. Newer
/// rights (pathname UNIX sockets in ABI 9, UDP in ABI 10) are not requested yet.
const ABI: landlock::ABI = landlock::ABI::V6;

/// What a writable directory grants: everything but making character and block devices, which
/// stay handled (so refused) everywhere. A device node made in the workspace would reach what
/// it names (a disk, `/dev/kmsg`) around every other rule.
fn write_rights() -> landlock::BitFlags<landlock::AccessFs> {
    use landlock::{Access, AccessFs};
    AccessFs::from_all(ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
}

/// The ruleset: read everywhere, write below the writable directories (`pinned` are the pinned
/// ones, already opened; the others are opened here by path).
fn landlock_rules(
    sandbox: &Sandbox,
    pinned: Vec<std::os::fd::OwnedFd>,
) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
    use landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope, path_beneath_rules,
    };
    let level = if sandbox.require {
        CompatLevel::HardRequirement
    } else {
        CompatLevel::BestEffort
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(AccessFs::from_all(ABI))?;
    if !sandbox.network {
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI))?;
    }
    let mut created = ruleset
        .scope(Scope::from_all(ABI))?
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI)))?
        .add_rules(path_beneath_rules(DEVICES, write_rights()))?;
    if sandbox.mode == Mode::WorkspaceWrite {
        // A pinned directory is never opened by path: that would follow a planted symlink.
        let by_path =
            (sandbox.write.iter()).filter(|dir| !sandbox.pins.iter().any(|pin| &pin.dir == *dir));
        let pinned = (pinned.into_iter())
            .map(|fd| Ok::<_, landlock::RulesetError>(PathBeneath::new(fd, write_rights())));
        created = created
            .add_rules(path_beneath_rules(by_path, write_rights()))?
            .add_rules(pinned)?;
    }
    Ok(created.no_new_privs(true))
}

fn hex(path: &Path) -> String {
    path.as_os_str()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A path with the identity it had, as `HEX,DEV,INO` (a pin's, a surveyed `.git`'s).
fn identified(value: &str) -> Option<(PathBuf, u64, u64)> {
    let mut parts = value.split(',');
    let (Some(path), Some(dev), Some(ino), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    Some((unhex(path)?, dev.parse().ok()?, ino.parse().ok()?))
}

fn unhex(text: &str) -> Option<PathBuf> {
    if text.is_empty() || !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    Some(PathBuf::from(OsString::from_vec(bytes)))
}

#[cfg(test)]
mod tests;
