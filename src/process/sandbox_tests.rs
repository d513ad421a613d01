use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn run_sandbox() -> Sandbox {
    Sandbox::for_run(
        (Mode::WorkspaceWrite, false),
        Path::new("/ws"),
        Path::new("/ws/t.outputs"),
        &[PathBuf::from("/cache"), PathBuf::from("/ws")],
        false,
    )
}

const FULL: Support = Support {
    landlock_abi: 7,
    seccomp: true,
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
    assert!(
        err.contains("\"strict\"") && err.contains("require"),
        "{err}"
    );
    for value in FLAG_VALUES {
        assert!(parse_flag(value).is_ok(), "{value}");
    }
    assert_eq!(Mode::default(), Mode::WorkspaceWrite, "on by default");
}

#[test]
fn the_run_writes_to_workspace_temp_outputs_and_extra_dirs_once_each() {
    let sb = run_sandbox();
    let temp = std::env::temp_dir();
    assert_eq!(
        sb.write,
        [
            PathBuf::from("/ws"),
            temp,
            PathBuf::from("/ws/t.outputs"),
            PathBuf::from("/cache")
        ]
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
        err,
        "--sandbox-write /no/such/dir: not an existing directory"
    );
}

#[test]
fn supervisor_arguments_round_trip() {
    let sb = run_sandbox();
    let mut args = sb.supervisor_args();
    assert_eq!(args[..2], os(&["--sandbox", "workspace-write"]));
    args.extend(os(&["--", "bash", "-c", "x"]));
    let (back, rest) = Sandbox::from_args(&args).unwrap();
    assert_eq!(back, sb);
    assert_eq!(rest, os(&["--", "bash", "-c", "x"]));

    let mut strict = Sandbox::new(Mode::ReadOnly);
    strict.require = true;
    strict.network = true;
    let args = strict.supervisor_args();
    assert_eq!(
        args,
        os(&["--sandbox", "read-only", "--require", "--network"])
    );
    assert_eq!(Sandbox::from_args(&args).unwrap().0, strict);

    // Off: no options at all, and what follows is left alone.
    assert!(Sandbox::off().supervisor_args().is_empty());
    let args = os(&["--", "--sandbox"]);
    let (off, rest) = Sandbox::from_args(&args).unwrap();
    assert!(off.is_off());
    assert_eq!(rest, args);
}

#[test]
fn paths_that_are_not_utf8_survive_the_arguments() {
    use std::os::unix::ffi::OsStrExt;
    let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/\xff\xfe dir"));
    let mut sb = Sandbox::new(Mode::WorkspaceWrite);
    sb.write.push(odd.clone());
    let (back, _) = Sandbox::from_args(&sb.supervisor_args()).unwrap();
    assert_eq!(back.write, [odd]);
}

#[test]
fn bad_supervisor_arguments_are_refused() {
    for bad in [
        &["--sandbox"][..],
        &["--sandbox", "off"],
        &["--sandbox", "nonsense"],
        &["--network", "--"],
        &["--write", "/x", "--"],
        &["--sandbox", "read-only", "--write"],
    ] {
        assert!(Sandbox::from_args(&os(bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn summary_serializes_for_the_start_line() {
    let sb = run_sandbox();
    let temp = std::env::temp_dir().display().to_string();
    let value = serde_json::to_value(sb.summary(FULL)).unwrap();
    assert_eq!(
        value,
        json!({
            "mode": "workspace-write",
            "required": false,
            "landlock_abi": 7,
            "network": false,
            "write": ["/ws", temp, "/ws/t.outputs", "/cache"],
            "enforced": {
                "filesystem": true,
                "network_tcp": true,
                "network_other": true,
                "processes": true,
                "signals": true,
                "abstract_unix_sockets": true
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
         ABI 4); UDP and other non-TCP sockets (seccomp); reading the memory and environment of \
         other processes of the same user (Landlock); signals to processes outside the tool, \
         such as rounds and its supervisor (Landlock ABI 6); abstract UNIX sockets (Landlock \
         ABI 6). Use --sandbox require to make this an error."
    );
    assert!(!warning.contains('\n'), "one line");
    assert_eq!(sb.enforced(Support::none()), Enforced::default());
}

#[test]
fn an_older_landlock_names_only_the_missing_features() {
    let sb = run_sandbox();
    let abi3 = Support {
        landlock_abi: 3,
        seccomp: true,
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
    };
    let missing = sb.with_network(true).missing(abi2);
    assert_eq!(
        missing,
        [
            "truncating files outside the writable directories (Landlock ABI 3)",
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
    let err = sb.check(Support::none()).unwrap_err();
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
