use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn run_sandbox() -> Sandbox {
    Sandbox::for_run(
        (Mode::WorkspaceWrite, false),
        Path::new("/ws"),
        &[PathBuf::from("/cache"), PathBuf::from("/ws")],
        false,
    )
}

const FULL: Support = Support {
    landlock_abi: 7,
    seccomp: true,
    mount_namespace: true,
};

#[test]
fn flag_values_parse_and_nonsense_is_refused() {
    assert_eq!(parse_flag("off"), Ok((Mode::Off, false)));
    assert_eq!(parse_flag("read-only"), Ok((Mode::ReadOnly, false)));
    assert_eq!(
        parse_flag("workspace-write"),
        Ok((Mode::WorkspaceWrite, false))
    );
    assert_eq!(parse_flag("require"), Ok((Mode::WorkspaceWrite, true)));
    let err = parse_flag("strict").unwrap_err();
    assert_eq!(err, SandboxError::UnknownMode("strict".into()));
    assert_eq!(
        err.to_string(),
        "unknown sandbox mode \"strict\" (expected one of: workspace-write, read-only, off, \
         require)"
    );
    for value in FLAG_VALUES {
        assert!(parse_flag(value).is_ok(), "{value}");
    }
    assert_eq!(Mode::default(), Mode::WorkspaceWrite, "on by default");
}

#[test]
fn the_run_writes_to_workspace_temp_and_extra_dirs_once_each() {
    let sb = run_sandbox();
    let temp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
    assert_eq!(
        sb.write,
        [PathBuf::from("/ws"), temp, PathBuf::from("/cache")]
    );
    assert!(!sb.network && !sb.require);
    let entry = sb.with_network(true);
    assert!(entry.network);
    assert_eq!(entry.write, sb.write);
}

#[test]
fn missing_extra_dirs_are_reported() {
    assert_eq!(Sandbox::check_dirs(&[std::env::temp_dir()]), Ok(()));
    let err = Sandbox::check_dirs(&[PathBuf::from("/no/such/dir")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--sandbox-write /no/such/dir: not an existing directory"
    );
}

#[test]
fn the_supervisor_variable_round_trips() {
    let mut sb = run_sandbox();
    sb.pin(Path::new("/ws/t.outputs"), 2049, 1234567);
    sb.pin(Path::new("/pinned"), u64::MAX, 1);
    let value = sb.to_env().unwrap();
    assert!(
        value
            .to_str()
            .unwrap()
            .starts_with("workspace-write write=")
    );
    assert_eq!(Sandbox::from_env(&value).unwrap(), sb);
    // Pinning adds the directory once, and a second pin replaces the first.
    assert_eq!(
        sb.write
            .iter()
            .filter(|w| *w == Path::new("/pinned"))
            .count(),
        1
    );
    sb.pin(Path::new("/pinned"), 3, 4);
    assert_eq!(sb.pins.len(), 2);
    assert_eq!((sb.pins[1].dev, sb.pins[1].ino), (3, 4));
    assert_eq!(sb.write.len(), 5);

    let mut strict = Sandbox::new(Mode::ReadOnly);
    strict.require = true;
    strict.network = true;
    let value = strict.to_env().unwrap();
    assert_eq!(value, "read-only require network");
    assert_eq!(Sandbox::from_env(&value).unwrap(), strict);

    // Off: no variable at all.
    assert_eq!(Sandbox::off().to_env(), None);
}

#[test]
fn paths_that_are_not_utf8_or_hold_spaces_survive_the_variable() {
    use std::os::unix::ffi::OsStrExt;
    let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/\xff\xfe dir\n=,x"));
    let mut sb = Sandbox::new(Mode::WorkspaceWrite);
    sb.write.push(odd.clone());
    sb.pin(&odd, 1, 2);
    let value = sb.to_env().unwrap();
    assert!(value.to_str().is_some(), "the value itself is plain text");
    let back = Sandbox::from_env(&value).unwrap();
    assert_eq!(back.write, std::slice::from_ref(&odd));
    assert_eq!(back.pins[0].dir, odd);
}

#[test]
fn bad_supervisor_variables_are_refused() {
    for bad in [
        "",
        "off",
        "nonsense",
        "read-only bogus",
        "workspace-write write=",
        "workspace-write write=2f7",
        "workspace-write write=zz",
        "workspace-write pin=2f,1",
        "workspace-write pin=2f,1,2,3",
        "workspace-write pin=2f,x,2",
        "workspace-write  require",
    ] {
        assert!(Sandbox::from_env(bad.as_ref()).is_err(), "{bad:?}");
    }
}

#[test]
fn summary_serializes_for_the_start_line() {
    let sb = run_sandbox();
    let temp = std::fs::canonicalize(std::env::temp_dir())
        .unwrap()
        .display()
        .to_string();
    let value = serde_json::to_value(sb.summary(FULL)).unwrap();
    assert_eq!(
        value,
        json!({
            "mode": "workspace-write",
            "required": false,
            "landlock_abi": 7,
            "network": false,
            "write": ["/ws", temp, "/cache"],
            "enforced": {
                "filesystem": true,
                "network_tcp": true,
                "network_other": true,
                "processes": true,
                "signals": true,
                "abstract_unix_sockets": true,
                "git_read_only": true
            }
        })
    );
    let back: Summary = serde_json::from_value(value).unwrap();
    assert_eq!(back, sb.summary(FULL));

    let off = serde_json::to_value(Sandbox::off().summary(FULL)).unwrap();
    assert_eq!(off["mode"], "off");
    assert_eq!(off["network"], true);
    assert_eq!(off["write"], json!(["/"]));
    assert!(
        off["enforced"]
            .as_object()
            .unwrap()
            .values()
            .all(|v| v == false),
        "{off}"
    );
    let ro = serde_json::to_value(Sandbox::new(Mode::ReadOnly).summary(FULL)).unwrap();
    assert_eq!(ro["mode"], "read-only");
    assert_eq!(ro["write"], json!([]));
}

#[test]
fn a_full_kernel_enforces_everything_and_says_nothing() {
    let sb = run_sandbox();
    assert_eq!(sb.check(FULL), Ok(None));
    assert_eq!(
        Sandbox::off().check(Support::none()),
        Ok(None),
        "off: silent"
    );
    // With the network allowed, the network is not wanted, so not missing.
    let open = sb.with_network(true);
    assert_eq!(open.check(FULL), Ok(None));
    assert!(!open.enforced(FULL).network_tcp && !open.enforced(FULL).network_other);
}

#[test]
fn no_landlock_degrades_with_one_warning_naming_what_is_not_enforced() {
    let sb = run_sandbox();
    let warning = sb.check(Support::none()).unwrap().unwrap();
    assert_eq!(
        warning,
        "warning: the tool sandbox (workspace-write) is degraded: this kernel has no Landlock, \
         so it does not enforce: filesystem writes (Landlock); TCP connect and bind (Landlock \
         ABI 4); UDP and other non-TCP sockets (seccomp); setuid and setgid modes, and chown \
         (seccomp); .git read-only below the writable directories (a mount namespace: rounds \
         needs CAP_SYS_ADMIN or unprivileged user namespaces); reading the memory and \
         environment of other processes of the same user (Landlock); signals to processes outside the tool, \
         such as rounds and its supervisor (Landlock ABI 6); abstract UNIX sockets (Landlock \
         ABI 6). Use --sandbox require to make this an error."
    );
    assert!(!warning.contains('\n'), "one line");
    assert_eq!(
        sb.enforced(Support::none()),
        Enforced {
            git_read_only: Some(false),
            ..Enforced::default()
        }
    );
}

#[test]
fn an_older_landlock_names_only_the_missing_features() {
    let sb = run_sandbox();
    let abi3 = Support {
        landlock_abi: 3,
        seccomp: true,
        mount_namespace: true,
    };
    let warning = sb.check(abi3).unwrap().unwrap();
    assert!(warning.contains("Landlock ABI 3, so"), "{warning}");
    assert!(warning.contains("TCP connect and bind"), "{warning}");
    assert!(warning.contains("signals to processes"), "{warning}");
    assert!(!warning.contains("filesystem"), "{warning}");
    assert!(!warning.contains("UDP"), "{warning}");
    let got = sb.enforced(abi3);
    assert!(got.filesystem && got.processes && got.network_other);
    assert!(!got.network_tcp && !got.signals && !got.abstract_unix_sockets);

    let abi2 = Support {
        landlock_abi: 2,
        seccomp: false,
        mount_namespace: true,
    };
    let missing = sb.with_network(true).missing(abi2);
    assert_eq!(
        missing,
        [
            "truncating files outside the writable directories (Landlock ABI 3)",
            "setuid and setgid modes, and chown (seccomp)",
            "signals to processes outside the tool, such as rounds and its supervisor \
             (Landlock ABI 6)",
            "abstract UNIX sockets (Landlock ABI 6)"
        ]
    );
}

#[test]
fn require_makes_a_degraded_sandbox_an_error() {
    let mut sb = run_sandbox();
    sb.require = true;
    assert_eq!(sb.check(FULL), Ok(None));
    let err = sb.check(Support::none()).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "--sandbox require: this kernel has no Landlock, so the tool sandbox cannot enforce: \
             filesystem writes (Landlock); "
        ),
        "{err}"
    );
}

#[test]
fn off_prepares_nothing() {
    assert!(Sandbox::off().prepare().unwrap().is_none());
}

#[test]
fn without_seccomp_the_file_mode_rules_are_missing_even_with_the_network() {
    let no_seccomp = Support {
        landlock_abi: 7,
        seccomp: false,
        mount_namespace: true,
    };
    let open = run_sandbox().with_network(true);
    assert_eq!(
        open.missing(no_seccomp),
        ["setuid and setgid modes, and chown (seccomp)"]
    );
    let mut required = open.clone();
    required.require = true;
    assert!(required.check(no_seccomp).is_err(), "require fails closed");
    assert_eq!(Sandbox::off().missing(no_seccomp), Vec::<String>::new());
}

#[test]
fn a_replaced_pinned_directory_is_not_prepared() {
    use std::os::unix::fs::MetadataExt;
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().canonicalize().unwrap().join("out");
    std::fs::create_dir(&dir).unwrap();
    let meta = std::fs::metadata(&dir).unwrap();
    let mut sb = Sandbox::new(Mode::WorkspaceWrite);
    sb.pin(&dir, meta.dev(), meta.ino());
    assert!(sb.prepare().is_ok_and(|c| c.is_some()));
    sb.pin(&dir, meta.dev(), meta.ino() + 1);
    match sb.prepare() {
        Err(e) => assert!(
            matches!(e, ConfineError::Pin(PinError::Replaced(ref d)) if *d == dir),
            "{e}"
        ),
        Ok(_) => panic!("a replaced pinned directory was prepared"),
    }
    // Read-only grants no directory, so has none to check.
    sb.mode = Mode::ReadOnly;
    assert!(sb.prepare().is_ok());
}

/// `mknod` of a block and a character device in `dir`, on a thread of its own that first
/// enters `sandbox`'s Landlock rules (only that thread: no other test is confined). Capabilities
/// stay as they are, so this sees Landlock alone.
fn mknod_on_a_thread(dir: &Path, sandbox: Option<&Sandbox>) -> Vec<std::io::Result<()>> {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(sandbox) = sandbox {
                landlock_rules(sandbox, Vec::new())
                    .unwrap()
                    .restrict_self()
                    .unwrap();
            }
            use rustix::fs::{FileType, Mode, makedev, mknodat};
            [
                (FileType::BlockDevice, "blk", 7),
                (FileType::CharacterDevice, "chr", 1),
            ]
            .into_iter()
            .map(|(kind, name, major)| {
                let path = dir.join(name);
                let _ = std::fs::remove_file(&path);
                mknodat(rustix::fs::CWD, &path, kind, Mode::RUSR, makedev(major, 3))
                    .map_err(std::io::Error::from)
            })
            .collect()
        })
        .join()
        .unwrap()
    })
}

#[test]
fn landlock_alone_refuses_device_nodes_in_a_writable_directory() {
    if !rustix::process::geteuid().is_root() || probe().landlock_abi == 0 {
        eprintln!("skipped: needs root (to make devices at all) and Landlock");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut sb = Sandbox::new(Mode::WorkspaceWrite);
    sb.write.push(dir.path().to_owned());
    for made in mknod_on_a_thread(dir.path(), Some(&sb)) {
        let err = made.unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EACCES), "{err}");
    }
    // Control: the same thread without the rules makes both.
    for made in mknod_on_a_thread(dir.path(), None) {
        made.unwrap();
    }
}

#[test]
fn without_a_mount_namespace_git_stays_writable_and_the_run_is_told() {
    let no_namespace = Support {
        mount_namespace: false,
        ..FULL
    };
    let sb = run_sandbox();
    assert_eq!(
        sb.missing(no_namespace),
        [
            ".git read-only below the writable directories (a mount namespace: rounds needs \
          CAP_SYS_ADMIN or unprivileged user namespaces)"
        ]
    );
    let mut required = sb.clone();
    required.require = true;
    assert!(
        required.check(no_namespace).is_err(),
        "require fails closed"
    );
    assert_eq!(sb.enforced(no_namespace).git_read_only, Some(false));
    assert_eq!(sb.enforced(FULL).git_read_only, Some(true));
    assert_eq!(
        Sandbox::new(Mode::ReadOnly)
            .enforced(no_namespace)
            .git_read_only,
        Some(true)
    );
    // Nothing is writable in read-only: Landlock alone keeps .git as it is.
    assert!(
        Sandbox::new(Mode::ReadOnly)
            .missing(no_namespace)
            .is_empty()
    );
}

/// Where no mount namespace can be had, a `.git` below the workspace is not left writable with
/// a warning: the run is refused, naming the `.git` and the ways out. Controls: the same
/// workspace with a namespace, with the user's `--sandbox-write .git`, in read-only mode, and
/// without a `.git` only warn or pass.
#[test]
fn without_a_mount_namespace_a_workspace_git_refuses_the_run_unless_the_user_opts_in() {
    let no_namespace = Support {
        mount_namespace: false,
        ..FULL
    };
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    let mut sb = Sandbox::new(Mode::WorkspaceWrite);
    sb.write = vec![ws.clone()];
    match sb.check_git(no_namespace) {
        Err(SandboxError::GitUnprotected(git)) => assert_eq!(git, ws.join(".git")),
        other => panic!("refused, not {other:?}"),
    }
    let message = sb.check_git(no_namespace).unwrap_err().to_string();
    assert!(
        message.contains(&format!("--sandbox-write {}", ws.join(".git").display())),
        "{message}"
    );
    assert_eq!(sb.check_git(FULL), Ok(()));
    let mut opted_in = sb.clone();
    opted_in.write.push(ws.join(".git"));
    assert_eq!(opted_in.check_git(no_namespace), Ok(()));
    let mut read_only = sb.clone();
    read_only.mode = Mode::ReadOnly;
    assert_eq!(read_only.check_git(no_namespace), Ok(()));
    std::fs::remove_dir_all(ws.join(".git")).unwrap();
    assert_eq!(sb.check_git(no_namespace), Ok(()));
}
