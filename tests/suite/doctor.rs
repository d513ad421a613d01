//! `rounds doctor`: each check against the real thing where the machine has it: the mock as
//! the endpoint, key variables and files, settings files, this kernel's sandbox, PostgreSQL.

use crate::common::mock::MockServer;
use crate::common::pg::{self, Schema, sql};
use crate::common::{Sandbox, run, sse};
use serde_json::Value;
use std::process::Command;

const SECRET: &str = "sk-ant-doctor-secret-0123456789";

/// A port nothing listens on.
fn closed_port() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

/// `rounds doctor -o json` with every provider's endpoint on loopback: the run's at `server`,
/// the others at a closed port (a test never reaches the internet).
fn doctor(sb: &Sandbox, server: &MockServer) -> Command {
    let closed = closed_port();
    let mut cmd = sb.rounds();
    cmd.env("ANTHROPIC_BASE_URL", server.url())
        .env("OPENAI_BASE_URL", format!("{closed}/v1"))
        .env("GEMINI_BASE_URL", &closed)
        .args(["doctor", "-o", "json", "--timeout", "5"]);
    cmd
}

fn report(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn check<'a>(report: &'a Value, kind: &str, subject: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == kind && c["subject"] == subject)
        .unwrap_or_else(|| panic!("no {kind} {subject}: {report}"))
}

#[test]
fn a_ready_setup_passes_and_the_key_is_never_shown_nor_sent() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![sse::answer("unused")]);
    let out = run(doctor(&sb, &server).env("ANTHROPIC_API_KEY", SECRET));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let r = report(&out.stdout);
    assert_eq!(r["ok"], true);
    assert_eq!(r["provider"], "anthropic");
    assert_eq!(r["model"]["is_default"], true);
    let key = check(&r, "key", "anthropic");
    assert_eq!(
        (key["state"].as_str(), key["needed"].as_bool()),
        (Some("ok"), Some(true))
    );
    assert_eq!(key["detail"], "found in ANTHROPIC_API_KEY");
    assert_eq!(check(&r, "endpoint", "anthropic")["state"], "ok");
    // The other providers' endpoints are down, and no run of this setup needs them.
    let openai = check(&r, "endpoint", "openai");
    assert_eq!(
        (openai["state"].as_str(), openai["needed"].as_bool()),
        (Some("fail"), Some(false))
    );
    // One request to the base URL, without the key.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("x-api-key"), None);
    assert!(!out.stdout.contains(SECRET) && !out.stderr.contains(SECRET));

    // The checklist a person reads.
    let out = run(doctor(&sb, &server)
        .env("ANTHROPIC_API_KEY", SECRET)
        .args(["-o", "text"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("What a run needs:\nok    model"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.ends_with("every check this run needs passed\n"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains(SECRET));
}

#[test]
fn a_missing_or_broken_key_and_a_dead_endpoint_fail_and_say_where_they_looked() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![]);
    let out = run(&mut doctor(&sb, &server));
    assert_eq!(out.code, 1, "{}", out.stderr);
    let r = report(&out.stdout);
    assert_eq!(r["ok"], false);
    assert_eq!(r["failed"], serde_json::json!(["key (anthropic)"]));
    let detail = check(&r, "key", "anthropic")["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(detail.contains("ANTHROPIC_API_KEY_FILE"), "{detail}");
    assert!(
        out.stderr.contains("needed checks failed: key (anthropic)"),
        "{}",
        out.stderr
    );

    // From files: the variable's _FILE, and --api-key-file (a file of two lines is refused).
    let file = sb.path("key");
    std::fs::write(&file, format!("{SECRET}\n")).unwrap();
    let out = run(doctor(&sb, &server).env("ANTHROPIC_API_KEY_FILE", &file));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let from = format!("found in ANTHROPIC_API_KEY_FILE ({})", file.display());
    assert_eq!(
        check(&report(&out.stdout), "key", "anthropic")["detail"],
        from
    );
    std::fs::write(&file, format!("{SECRET}\nsecond line\n")).unwrap();
    let out = run(doctor(&sb, &server).arg("--api-key-file").arg(&file));
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("expected one line"), "{}", out.stdout);
    assert!(!out.stdout.contains(SECRET) && !out.stderr.contains(SECRET));

    // The control: where doctor does print a value (the model it was given), the same search
    // finds it.
    let out = run(doctor(&sb, &server).args(["-m", SECRET]));
    assert!(out.stdout.contains(SECRET), "{}", out.stdout);

    // The run's endpoint down: needed, so it fails.
    let out = run(doctor(&sb, &server)
        .env("ANTHROPIC_API_KEY", SECRET)
        .args(["--base-url", &closed_port()]));
    assert_eq!(out.code, 1);
    let r = report(&out.stdout);
    assert_eq!(r["failed"], serde_json::json!(["endpoint (anthropic)"]));
}

#[test]
fn the_model_comes_from_the_settings_and_aliases_as_in_a_run() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![]);
    let config = sb.path("home/.config/rounds");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "model = \"flash\"\n").unwrap();
    let out = run(doctor(&sb, &server).env("GEMINI_API_KEY", SECRET));
    let r = report(&out.stdout);
    assert_eq!(r["model"]["given"], "flash", "{r}");
    assert_eq!(r["model"]["spec"], "gemini/gemini-2.5-flash");
    assert_eq!(r["provider"], "gemini");
    assert_eq!(check(&r, "key", "gemini")["state"], "ok");
    // GEMINI_BASE_URL is the closed port: the run's endpoint is down.
    assert_eq!(r["failed"], serde_json::json!(["endpoint (gemini)"]));

    let out = run(doctor(&sb, &server).args(["-m", "sonet"]));
    assert_eq!(out.code, 1);
    let r = report(&out.stdout);
    let model = check(&r, "model", "sonet");
    assert_eq!(model["state"], "fail");
    assert!(
        model["detail"]
            .as_str()
            .unwrap()
            .contains("did you mean sonnet?"),
        "{model}"
    );
}

#[test]
fn each_settings_file_is_checked_and_a_broken_one_is_reported_not_fatal() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![]);
    let config = sb.path("home/.config/rounds");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "max-rounds = 5\n").unwrap();
    sb.write(".rounds.toml", "max-roundz = 3\n");
    let out = run(doctor(&sb, &server).env("ANTHROPIC_API_KEY", SECRET));
    assert_eq!(out.code, 1, "{}", out.stderr);
    let r = report(&out.stdout);
    let user = config.join("config.toml").display().to_string();
    assert_eq!(check(&r, "settings", &user)["state"], "ok");
    let project = sb.ws().join(".rounds.toml").display().to_string();
    let bad = check(&r, "settings", &project);
    assert_eq!(bad["state"], "fail");
    assert!(
        bad["detail"].as_str().unwrap().contains("max-roundz"),
        "{bad}"
    );
    assert_eq!(r["failed"].as_array().unwrap().len(), 1, "{r}");
    assert!(
        !bad["detail"].as_str().unwrap().contains(&project),
        "the path is said twice: {bad}"
    );
    // A file that reads as TOML with a value no run takes: doctor says what a run would.
    std::fs::remove_file(sb.ws().join(".rounds.toml")).unwrap();
    std::fs::write(config.join("config.toml"), "max-rounds = \"five\"\n").unwrap();
    let out = run(doctor(&sb, &server).env("ANTHROPIC_API_KEY", SECRET));
    assert_eq!(out.code, 1, "{}", out.stderr);
    let values = check(&report(&out.stdout), "settings", "values").clone();
    assert_eq!(values["state"], "fail");
    let detail = values["detail"].as_str().unwrap();
    assert!(
        detail.contains("config.toml:1") && detail.contains("five"),
        "{values}"
    );
    let control = run(sb.anthropic(&server).args(["hi"]));
    assert_eq!(control.code, 2, "a run refuses it too: {}", control.stderr);
    std::fs::write(config.join("config.toml"), "max-rounds = 5\n").unwrap();
    // A profile that no file has.
    let out = run(doctor(&sb, &server)
        .env("ANTHROPIC_API_KEY", SECRET)
        .args(["--profile", "cii"]));
    assert_eq!(out.code, 1);
    let r = report(&out.stdout);
    assert_eq!(check(&r, "settings", "--profile, -c")["state"], "fail");
}

#[test]
fn the_sandbox_check_reports_what_this_kernel_gives() {
    let support = rounds_process::sandbox::probe();
    let sb = Sandbox::new();
    let server = MockServer::start(vec![]);
    for (mode, shown) in [
        ("workspace-write", "workspace-write"),
        ("require", "require"),
        ("off", "off"),
    ] {
        let out = run(doctor(&sb, &server)
            .env("ANTHROPIC_API_KEY", SECRET)
            .args(["-c", &format!("sandbox={mode}")]));
        let r = report(&out.stdout);
        let c = check(&r, "sandbox", shown);
        let detail = c["detail"].as_str().unwrap();
        let abi = format!("Landlock ABI {}", support.landlock_abi);
        assert!(detail.contains(&abi) || mode == "require", "{detail}");
        // All of it enforced needs Landlock ABI 6 and seccomp: as the run would, require
        // fails where the kernel lacks them, and the others only warn.
        let full = support.landlock_abi >= 6 && support.seccomp;
        let want = match (mode, full) {
            ("off", _) | (_, true) => "ok",
            ("require", false) => "fail",
            (_, false) => "warn",
        };
        assert_eq!(c["state"], want, "{mode}: {c}");
        assert_eq!(
            out.code,
            if want == "fail" { 1 } else { 0 },
            "{mode}: {}",
            out.stderr
        );
        if !full {
            println!(
                "this kernel (Landlock ABI {}) gives a partial sandbox",
                support.landlock_abi
            );
        }
    }
}

#[test]
fn the_store_is_reached_without_being_changed_and_its_password_is_hidden() {
    let sb = Sandbox::new();
    let server = MockServer::start(vec![]);
    // Unreachable: needs no server.
    let port = closed_port().rsplit(':').next().unwrap().to_owned();
    let url = format!("postgres://rounds:hunter2@127.0.0.1:{port}/runs?sslmode=disable");
    let out = run(doctor(&sb, &server)
        .env("ANTHROPIC_API_KEY", SECRET)
        .env("ROUNDS_STORE", &url));
    assert_eq!(out.code, 1);
    let r = report(&out.stdout);
    assert_eq!(r["failed"], serde_json::json!(["store ()"]));
    assert!(
        out.stdout.contains("cannot connect to the store"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("hunter2") && !out.stderr.contains("hunter2"));
    // No store given: nothing to check, and nothing needed.
    let out = run(doctor(&sb, &server)
        .env("ANTHROPIC_API_KEY", SECRET)
        .env("ROUNDS_STORE", ""));
    assert_eq!(out.code, 0, "{}", out.stdout);

    let Some(base) = pg::server() else { return };
    let schema = Schema::new(base);
    let out = run(doctor(&sb, &server)
        .env("ANTHROPIC_API_KEY", SECRET)
        .args(["--store", &schema.url]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let r = report(&out.stdout);
    let store = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "store")
        .unwrap();
    assert_eq!(store["state"], "ok", "{store}");
    let tables = "SELECT count(*) FROM information_schema.tables \
                  WHERE table_schema = current_schema()";
    assert_eq!(
        sql(&schema.url, tables)[0].get::<_, i64>(0),
        0,
        "doctor migrated"
    );
}
