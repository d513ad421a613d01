//! `--edit` and `--full-auto` (issue 23 §2): what each offers, that `--deny` still wins, that
//! `--full-auto` runs commands only under the sandbox (with the control: the same command with
//! the sandbox off does the harm), that a project file cannot turn them on while the user's
//! file can, and that `rounds tools` names them.

use serde_json::{Value, json};

use super::settings::{project_file, user_file};
use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Run, Sandbox, run};

/// A model that makes `calls` (tool, input) in its first response, then answers "done".
fn model(calls: &[(&str, Value)]) -> MockServer {
    let inputs: Vec<(String, String, String)> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, input))| (format!("call_{i}"), name.to_string(), input.to_string()))
        .collect();
    let blocks: Vec<B> = inputs
        .iter()
        .map(|(id, name, input)| B::Tool(id, name, input))
        .collect();
    MockServer::start(vec![
        Reply::sse(sse::anthropic(&blocks, "tool_use", 10, 5)),
        sse::answer("done"),
    ])
}

/// A run in `sb` with its own temp dir (`sb/tmp`): the sandbox lets tools write in the temp
/// dir, and the test's directories around the workspace must be outside it.
fn go(sb: &Sandbox, server: &MockServer, args: &[&str]) -> Run {
    std::fs::create_dir_all(sb.path("tmp")).unwrap();
    run(sb
        .anthropic(server)
        .env("TMPDIR", sb.path("tmp"))
        .arg("--transcript")
        .arg(sb.transcript_path())
        .args(args)
        .arg("go"))
}

/// Every tool result of the run, by tool name, in order.
fn results(sb: &Sandbox) -> Vec<(String, bool, String)> {
    sb.transcript()
        .iter()
        .filter(|l| l["type"] == "round")
        .flat_map(|l| l["results"].as_array().cloned().unwrap_or_default())
        .map(|r| {
            let name = r["name"].as_str().unwrap_or("").to_owned();
            let content = r["content"].to_string();
            (name, r["is_error"] == true, content)
        })
        .collect()
}

/// The tools the model was offered, from the first request it got.
fn offered(server: &MockServer) -> Vec<String> {
    let first = server.requests()[0].json();
    let tools = first["tools"].as_array().cloned().unwrap_or_default();
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn write(path: &str) -> (&'static str, Value) {
    ("write_file", json!({"path": path, "content": "written\n"}))
}

#[test]
fn edit_offers_the_file_writing_tools_and_full_auto_adds_bash() {
    for (flags, expect_bash) in [(&["--edit"][..], false), (&["--full-auto"][..], true)] {
        let sb = Sandbox::new();
        let server = model(&[
            write("new.txt"),
            ("bash", json!({"command": "echo ran > ran.txt"})),
        ]);
        let out = go(&sb, &server, flags);
        assert_eq!(out.code, 0, "{flags:?}: {}", out.stderr);
        let tools = offered(&server);
        assert!(tools.contains(&"write_file".into()) && tools.contains(&"edit_file".into()));
        assert_eq!(
            tools.contains(&"bash".into()),
            expect_bash,
            "{flags:?}: {tools:?}"
        );
        assert_eq!(
            std::fs::read_to_string(sb.ws().join("new.txt")).unwrap(),
            "written\n"
        );
        assert_eq!(sb.ws().join("ran.txt").exists(), expect_bash, "{flags:?}");
    }
    // The control: without a preset, the same calls change nothing.
    let sb = Sandbox::new();
    let server = model(&[
        write("new.txt"),
        ("bash", json!({"command": "echo ran > ran.txt"})),
    ]);
    assert_eq!(go(&sb, &server, &[]).code, 0);
    assert!(!sb.ws().join("new.txt").exists() && !sb.ws().join("ran.txt").exists());
    assert!(results(&sb).iter().all(|(_, is_error, _)| *is_error));
}

#[test]
fn deny_wins_over_a_preset_and_none_before_it_does_not_clear_it() {
    let sb = Sandbox::new();
    let server = model(&[
        write("src/a.txt"),
        write("b.txt"),
        ("bash", json!({"command": "echo ran > ran.txt"})),
    ]);
    let deny = [
        "--full-auto",
        "--deny",
        "bash,write_file(src/**)",
        "-a",
        "none",
    ];
    assert_eq!(go(&sb, &server, &deny).code, 0);
    assert!(
        !sb.ws().join("src/a.txt").exists(),
        "a denied path was written"
    );
    assert!(!sb.ws().join("ran.txt").exists(), "a denied tool ran");
    assert_eq!(
        std::fs::read_to_string(sb.ws().join("b.txt")).unwrap(),
        "written\n"
    );
    assert!(!offered(&server).contains(&"bash".into()));
    assert!(
        !offered(&server).contains(&"read_file".into()),
        "-a none clears the default"
    );
}

/// An attacker's commands under `--full-auto`: each tries to write outside the workspace or
/// reach the network. With the sandbox (the default) none succeeds; the control runs the same
/// commands with the sandbox off (and no preset) and they do their harm.
#[test]
fn full_auto_commands_stay_in_the_sandbox_and_the_same_commands_without_it_escape() {
    let probe = Sandbox::new();
    let tools = run(probe.rounds().args(["tools", "--full-auto"]));
    if !tools.stdout.contains("enforced: filesystem") {
        eprintln!(
            "skipped: this kernel does not enforce the filesystem sandbox:\n{}",
            tools.stdout
        );
        return;
    }
    let hostile = [
        "touch ../escaped-touch",
        "echo x > \"$HOME/escaped-home\"",
        "cp /etc/passwd ../escaped-cp",
        "mkdir ../escaped-dir",
    ];
    // A listener to reach over the network: the sandbox has none.
    let target = MockServer::start(vec![]);
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{}", target.addr.port());
    let mut calls: Vec<(&str, Value)> = hostile
        .iter()
        .map(|c| ("bash", json!({"command": c})))
        .collect();
    calls.push(("bash", json!({"command": connect})));
    let escaped = |sb: &Sandbox| -> Vec<&str> {
        let home = sb.path("home");
        let dir = sb.dir.path();
        let found = [
            dir.join("escaped-touch"),
            home.join("escaped-home"),
            dir.join("escaped-cp"),
            dir.join("escaped-dir"),
        ];
        hostile
            .iter()
            .zip(found)
            .filter(|(_, p)| p.exists())
            .map(|(c, _)| *c)
            .collect()
    };
    let sb = Sandbox::new();
    assert_eq!(go(&sb, &model(&calls), &["--full-auto"]).code, 0);
    assert_eq!(escaped(&sb), Vec::<&str>::new(), "escaped the sandbox");
    let start = &sb.transcript()[0];
    assert_eq!(start["sandbox"]["mode"], "workspace-write");
    assert_eq!(start["sandbox"]["network"], false);
    let network_enforced = start["sandbox"]["enforced"]["network_tcp"] == true;
    if network_enforced {
        assert_eq!(
            target.connections(),
            0,
            "a sandboxed command reached the network"
        );
    } else {
        eprintln!("not checked: this kernel does not enforce the TCP sandbox");
    }

    let control = Sandbox::new();
    let off = ["-a", "bash", "--sandbox", "off"];
    assert_eq!(go(&control, &model(&calls), &off).code, 0);
    assert_eq!(
        escaped(&control),
        hostile.to_vec(),
        "the control must do its harm"
    );
    if network_enforced {
        assert!(
            target.connections() > 0,
            "the control must reach the listener"
        );
    }
}

#[test]
fn full_auto_refuses_to_run_commands_with_the_sandbox_off() {
    let sb = Sandbox::new();
    let server = model(&[("bash", json!({"command": "true"}))]);
    let out = go(&sb, &server, &["--full-auto", "--sandbox", "off"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("--full-auto runs commands under the sandbox"),
        "{}",
        out.stderr
    );
    assert!(
        server.requests().is_empty(),
        "no request before a usage error"
    );
    // From the user's settings file too: the sandbox is off there, the preset on the command line.
    user_file(&sb, "sandbox = \"off\"\n");
    assert_eq!(go(&sb, &server, &["--full-auto"]).code, 2);
    // --edit runs no process, so it has nothing to refuse.
    let server = model(&[write("a.txt")]);
    assert_eq!(go(&sb, &server, &["--edit"]).code, 0);
    assert!(sb.ws().join("a.txt").exists());
}

/// A pull request's `.rounds.toml` turning the presets on is ignored with a warning; the same
/// lines in the user's own file take effect (the control).
#[test]
fn a_project_file_cannot_turn_a_preset_on_and_the_users_file_can() {
    for key in ["edit", "full-auto"] {
        let sb = Sandbox::new();
        project_file(&sb, &format!("{key} = true\n"));
        let server = model(&[write("pwned.txt")]);
        let out = go(&sb, &server, &[]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stderr.contains(key),
            "no warning names {key}: {}",
            out.stderr
        );
        assert!(
            !sb.ws().join("pwned.txt").exists(),
            "{key} from the project file took effect"
        );
        assert!(!offered(&server).contains(&"write_file".into()));
        let config = run(sb.rounds().current_dir(sb.ws()).arg("config"));
        assert!(
            config.stdout.contains(&format!("# {key} = true  #")),
            "rounds config does not show the refused switch as it was: {}",
            config.stdout
        );

        let control = Sandbox::new();
        user_file(&control, &format!("{key} = true\n"));
        assert_eq!(go(&control, &model(&[write("mine.txt")]), &[]).code, 0);
        assert!(
            control.ws().join("mine.txt").exists(),
            "{key} from the user's file"
        );
    }
}

#[test]
fn rounds_tools_names_the_preset_that_offers_each_tool() {
    let sb = Sandbox::new();
    let out = run(sb.rounds().args(["tools", "--edit"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let row = |name: &str| {
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")));
        line.unwrap_or_else(|| panic!("no row for {name}: {}", out.stdout))
            .to_owned()
    };
    assert!(row("write_file").contains("--edit"), "{}", out.stdout);
    assert!(row("bash").contains(" no "), "{}", out.stdout);
    assert!(row("read_file").contains(" yes "), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("Presets: --edit (write_file, edit_file): on; --full-auto"),
        "{}",
        out.stdout
    );
    // Allowed by -a as well: the preset is not what offers it.
    let out = run(sb
        .rounds()
        .args(["tools", "--edit", "-a", "write_file", "-o", "json"]));
    let tools: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let get = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    assert_eq!(get("write_file").get("preset"), None);
    assert_eq!(get("edit_file")["preset"], "--edit");
    assert_eq!(get("bash")["offered"], false);
}

#[test]
fn a_batch_applies_a_preset_to_every_job() {
    let sb = Sandbox::new();
    let jobs = sb.ws().join("jobs.jsonl");
    std::fs::write(
        &jobs,
        "{\"id\":\"a\",\"prompt\":\"job-a\"}\n{\"id\":\"b\",\"prompt\":\"job-b\"}\n",
    )
    .unwrap();
    let server = MockServer::respond(|r| {
        let job = super::batch::job_of(r);
        if super::batch::rounds_before(r) == 0 {
            let input = json!({"path": format!("{job}.txt"), "content": "x"}).to_string();
            Reply::sse(sse::anthropic(
                &[B::Tool("w", "write_file", &input)],
                "tool_use",
                1,
                1,
            ))
        } else {
            sse::answer("done")
        }
    });
    let out = run(sb
        .anthropic(&server)
        .args(["batch", "jobs.jsonl", "--out", "out", "--edit"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(sb.ws().join("job-a.txt").exists() && sb.ws().join("job-b.txt").exists());
}
