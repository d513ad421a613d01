//! Issue 21 §2: everything rounds writes itself goes through one primitive (`files`). Each test
//! is an attack the issue showed, made as a tool of the run would make it (a scripted bash call,
//! in the default sandbox): it swaps a directory or a file rounds is going to write for a link
//! to a place outside the sandbox, and rounds must write nothing there.
//!
//! Each has a CONTROL showing the planted link really leads outside, so a test cannot pass
//! because the attack never worked: the tool reads a canary through the link during the run,
//! and after the run a plain write through the same path lands outside.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::batch::jobs_file;
use crate::common::mock::{MockServer, Reply};
use crate::common::sse::{self, B};
use crate::common::{Run, Sandbox, parse_lines, read_jsonl, run, types};

const CANARY: &str = "outside canary\n";

/// A server that answers the n-th request with the n-th command as a bash call (`t1`, `t2`, …),
/// then with the answer "done".
fn bash_rounds(commands: &[&str]) -> MockServer {
    let mut replies: Vec<Reply> = (1..)
        .zip(commands)
        .map(|(i, c)| {
            let (id, input) = (format!("t{i}"), json!({ "command": c }).to_string());
            Reply::sse(sse::anthropic(
                &[B::Tool(&id, "bash", &input)],
                "tool_use",
                1,
                1,
            ))
        })
        .collect();
    replies.push(sse::answer("done"));
    MockServer::start(replies)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The binary talking to `server`, offering bash, with a temp dir of the test's own: the temp
/// dir is writable in the sandbox, and the system one holds this test's files.
fn rounds(sb: &Sandbox, server: &MockServer) -> std::process::Command {
    let tmp = sb.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = sb.anthropic(server);
    cmd.env("TMPDIR", tmp).args(["-a", "bash"]);
    cmd
}

/// Whether this kernel confines tools to their writable directories (Landlock). Without it, a
/// tool could write outside itself and make hard links anywhere; rounds' own writes must still
/// land where rounds opened them, so the tests run either way and only skip those steps.
fn confined() -> bool {
    let abi = super::sandbox::support().landlock_abi;
    if abi == 0 {
        eprintln!("skipped: the tool's direct write and hard link need Landlock to be refused");
    }
    abi > 0
}

/// A shell command that tries to write in `dir` itself, where the sandbox confines tools: the
/// directory really is outside what a tool may write (rounds is the only way in).
fn write_directly(dir: &Path) -> String {
    if !confined() {
        return "echo direct write not tried; ".to_owned();
    }
    format!(
        "(echo x > '{}/direct') 2>/dev/null && echo direct write made || echo direct write refused; ",
        dir.display()
    )
}

/// What the planting tool prints: it could not write outside itself, then planted the link.
fn planted() -> String {
    let direct = if confined() { "refused" } else { "not tried" };
    format!("\ndirect write {direct}\nplanted\n")
}

/// A directory outside the workspace and the temp dir (no tool may write there), holding a
/// canary file.
fn outside(sb: &Sandbox) -> PathBuf {
    let dir = sb.path("outside");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("canary"), CANARY).unwrap();
    dir
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Nothing but the canary, as it was.
fn untouched(outside: &Path) {
    assert_eq!(names(outside), ["canary"], "rounds wrote outside");
    assert_eq!(read(&outside.join("canary")), CANARY);
}

/// The control after the run: a plain write through `link` (still the planted link) lands in
/// `outside`.
fn leads_outside(link: &Path, outside: &Path) {
    let kind = std::fs::symlink_metadata(link).unwrap().file_type();
    assert!(
        kind.is_symlink(),
        "{} is not the planted link",
        link.display()
    );
    std::fs::write(link.join("probe"), "probe").unwrap();
    assert_eq!(read(&outside.join("probe")), "probe");
}

/// The result of call `id`, from a transcript or a `stream-json` output.
fn result(lines: &[Value], id: &str) -> Value {
    lines
        .iter()
        .flat_map(|line| match line["type"].as_str() {
            Some("tool_result") => vec![line],
            _ => line["results"].as_array().into_iter().flatten().collect(),
        })
        .find(|r| r["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("no result {id} in {lines:#?}"))
        .clone()
}

fn content(result: &Value) -> &str {
    result["content"].as_str().unwrap()
}

/// Fails unless `text` holds every one of `parts`.
fn holds(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} not in:\n{text}");
    }
}

/// The saved whole output a cut result names.
fn saved(result: &Value) -> PathBuf {
    let c = content(result);
    let path = c
        .split("the whole output is in ")
        .nth(1)
        .and_then(|rest| rest.split(" ...]").next())
        .unwrap_or_else(|| panic!("not cut, or no file named: {c}"));
    PathBuf::from(path)
}

/// The call that reads the canary through the planted link and prints more than
/// `--max-result-bytes 1024`, so that rounds saves its whole output.
const LONG: &str = "cat \"$D/canary\"; yes | head -c 5000";

fn long(dir: &str) -> String {
    LONG.replace("$D", dir)
}

#[test]
fn without_a_transcript_the_outputs_dir_is_unpredictable_and_a_link_in_its_place_leads_nowhere() {
    let mut seen = Vec::new();
    for _ in 0..2 {
        let sb = Sandbox::new();
        let tmp = sb.path("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let outside = outside(&sb);
        // The tool finds the directory, reads every command line on the machine (a name in one
        // would be readable by every user), then renames it away and plants a link.
        let find = format!(
            "for d in \"$TMPDIR\"/rounds-*; do echo \"dir=$d\"; done; d=$(ls -d \"$TMPDIR\"/rounds-*); \
             echo \"$d\" > \"$TMPDIR/which\"; stat -c 'mode=%a' \"$d\"; \
             for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\" 2>/dev/null; echo; done > cmdlines.txt; \
             {}mv \"$d\" \"$d.moved\" && ln -s '{}' \"$d\" && echo planted",
            write_directly(&outside),
            outside.display()
        );
        let later = long("$(cat \"$TMPDIR/which\")");
        let server = bash_rounds(&[&find, &later]);
        let out = run(rounds(&sb, &server)
            .args(["--no-transcript", "--max-result-bytes", "1024"])
            .args(["-o", "stream-json", "go"]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let lines = parse_lines(&out.stdout);
        let run_id = lines[0]["run_id"].as_str().unwrap().to_owned();

        let first = result(&lines, "t1");
        let found = content(&first);
        let dirs: Vec<&str> = found
            .lines()
            .filter_map(|l| l.strip_prefix("dir="))
            .collect();
        let [dir] = dirs[..] else {
            panic!("not one outputs dir: {found}");
        };
        let name = Path::new(dir).file_name().unwrap().to_str().unwrap();
        let suffix = name.strip_prefix("rounds-").unwrap();
        assert!(
            suffix.len() >= 16 && suffix.bytes().all(|b| b.is_ascii_hexdigit()),
            "{name}"
        );
        // Nothing of the run id (its time, its random part) is in the name.
        for part in run_id.split(['-', 'T', '.']) {
            assert!(!suffix.contains(part), "{name} from {run_id}");
        }
        holds(found, &["\nmode=700\n"]);
        holds(found, &[&planted()]);
        // Every command line was readable, the supervisor's among them; none names the dir.
        let cmdlines = read(&sb.ws().join("cmdlines.txt"));
        holds(&cmdlines, &["__rounds-supervise"]);
        assert!(!cmdlines.contains(suffix), "{cmdlines}");

        // CONTROL: during the later call the dir's path led outside...
        let later = result(&lines, "t2");
        holds(content(&later), &[CANARY]);
        // ...yet its whole output went to the directory rounds made, wherever that went.
        assert_eq!(saved(&later), Path::new(dir).join("t2.txt"));
        assert!(!content(&later).contains("failed"), "{}", content(&later));
        // Saved there, then removed with the run through the same handle: the directory the
        // tool moved away is left empty, and nothing of the run stays behind.
        let moved = tmp.join(format!("{name}.moved"));
        assert_eq!(std::fs::read_dir(&moved).unwrap().count(), 0);
        // Nothing landed outside, and tidying the run's dir away did not follow the link.
        untouched(&outside);
        if std::fs::symlink_metadata(dir).is_err() {
            // Removed with the run (the link, not what it leads to): planted again, to show
            // what a write by the path would have done.
            symlink(&outside, dir).unwrap();
        }
        leads_outside(Path::new(dir), &outside);
        seen.push(suffix.to_owned());
    }
    assert_ne!(seen[0], seen[1], "two runs, one name");
}

#[test]
fn a_transcripts_outputs_dir_swapped_for_a_link_keeps_every_saved_output_inside() {
    let sb = Sandbox::new();
    let outside = outside(&sb);
    let ws = sb.ws();
    // `t.outputs` beside a transcript in the workspace: the tool can rename it.
    let plant = format!(
        "ls -d t.outputs && {}mv t.outputs t.outputs.moved && ln -s '{}' t.outputs && echo planted",
        write_directly(&outside),
        outside.display()
    );
    let server = bash_rounds(&[&plant, &long("t.outputs")]);
    let out = run(rounds(&sb, &server).args([
        "--transcript",
        "t.jsonl",
        "--max-result-bytes",
        "1024",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "done\n");
    let lines = read_jsonl(&ws.join("t.jsonl"));
    assert_eq!(types(&lines), ["start", "round", "round", "round", "end"]);
    holds(content(&result(&lines, "t1")), &[&planted()]);

    // CONTROL: the later call read the canary through the link...
    let later = result(&lines, "t2");
    holds(content(&later), &[CANARY]);
    // ...and its whole output went to the directory rounds made, not through the link.
    assert_eq!(saved(&later), ws.join("t.outputs/t2.txt"));
    let kept = read(&ws.join("t.outputs.moved/t2.txt"));
    holds(&kept, &[&format!("{CANARY}y\ny\n")]);
    untouched(&outside);
    leads_outside(&ws.join("t.outputs"), &outside);
}

/// The first job (`job-0` of `jobs_file`) calls `first` then answers; the second calls `second`.
fn two_jobs(first: String, second: String) -> MockServer {
    use super::batch::{job_of, rounds_before};
    MockServer::respond(move |request| {
        let command = match job_of(request).as_str() {
            "job-0" => &first,
            "job-1" => &second,
            other => panic!("{other}"),
        };
        let input = json!({ "command": command }).to_string();
        let call = [B::Tool("t1", "bash", &input)];
        match rounds_before(request) {
            0 => Reply::sse(sse::anthropic(&call, "tool_use", 1, 1)),
            _ => sse::answer("done"),
        }
    })
}

#[test]
fn a_batch_out_dir_swapped_for_a_link_by_one_job_keeps_every_later_file_inside() {
    let sb = Sandbox::new();
    let outside = outside(&sb);
    let ws = sb.ws();
    // `--out out` is in the workspace: the first job's tool renames it away and plants a link.
    let plant = format!(
        "{}mv out out.moved && ln -s '{}' out && echo planted",
        write_directly(&outside),
        outside.display()
    );
    let server = two_jobs(plant, long("out"));
    std::fs::create_dir(sb.path("tmp")).unwrap();
    let out = run(sb
        .anthropic(&server)
        .env("TMPDIR", sb.path("tmp"))
        .arg("batch")
        .arg(jobs_file(&sb, 2))
        .args(["--out", "out/", "--jobs", "1", "--junit", "out/junit.xml"])
        .args(["--step-summary", "out/summary.md"])
        .args(["-a", "bash", "--max-result-bytes", "1024"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    holds(&out.stderr, &["2 of 2 jobs completed"]);

    // Everything of the batch is in the directory it opened before the first job ran.
    let kept = ws.join("out.moved");
    let first = read_jsonl(&kept.join("job-0.jsonl"));
    holds(content(&result(&first, "t1")), &[&planted()]);
    let second = read_jsonl(&kept.join("job-1.jsonl"));
    assert_eq!(types(&second), ["start", "round", "round", "end"]);
    // CONTROL: the second job's tool read the canary through the link.
    let later = result(&second, "t1");
    holds(content(&later), &[CANARY]);
    assert_eq!(saved(&later), ws.join("out/job-1.outputs/t1.txt"));
    let whole = read(&kept.join("job-1.outputs/t1.txt"));
    holds(&whole, &[&format!("{CANARY}y\ny\n")]);
    let ids: Vec<Value> = read(&kept.join("results.jsonl"))
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].clone())
        .collect();
    assert_eq!(ids, ["job-0", "job-1"]);
    let junit = read(&kept.join("junit.xml"));
    holds(&junit, &["job-1"]);
    let summary = read(&kept.join("summary.md"));
    holds(&summary, &["2 of 2 jobs completed"]);
    untouched(&outside);
    leads_outside(&ws.join("out"), &outside);
}

/// A victim file outside the sandbox.
fn make_victim(sb: &Sandbox) -> PathBuf {
    let path = sb.path("victim.txt");
    std::fs::write(&path, "precious\n").unwrap();
    path
}

/// Whether the tool's `ln` (a hard link to a file outside the writable dirs) was made, from
/// its result; when the sandbox refused it, says so.
fn hard_link_made(result: &Value) -> bool {
    let c = content(result);
    if c.contains("\nlinked\n") {
        return true;
    }
    // Landlock refuses a link that would make the victim writable where it was not ("refer"),
    // with EXDEV.
    let refused = [
        "ln: failed to create hard link",
        "Invalid cross-device link",
    ];
    holds(c, &refused);
    eprintln!("the sandbox refused the hard link to a file outside its writable directories");
    false
}

/// `--step-summary summary.md` in the workspace, with a summary from an earlier step: the tool
/// renames it away and plants `link` (`-s` or not) to the victim in its place.
fn summary_swapped(sb: &Sandbox, ln: &str, sandbox: &str) -> (i32, Value) {
    let ws = sb.ws();
    std::fs::write(ws.join("summary.md"), "# An earlier step\n").unwrap();
    let plant = format!(
        "mv summary.md summary.moved && ln {ln} '{}' summary.md && echo linked",
        sb.path("victim.txt").display()
    );
    let server = bash_rounds(&[&plant]);
    let out = run(rounds(sb, &server)
        .args([
            "--no-transcript",
            "--sandbox",
            sandbox,
            "--step-summary",
            "summary.md",
        ])
        .args(["-o", "stream-json", "go"]));
    (out.code, result(&parse_lines(&out.stdout), "t1"))
}

#[test]
fn a_step_summary_swapped_for_a_link_to_a_victim_leaves_the_victim_alone() {
    let appended = |sb: &Sandbox| {
        let md = read(&sb.ws().join("summary.moved"));
        assert!(
            md.starts_with("# An earlier step\n\n### ✅ rounds: completed (exit 0)\n"),
            "{md}"
        );
    };
    // A symbolic link.
    let sb = Sandbox::new();
    let victim = make_victim(&sb);
    let (code, planted) = summary_swapped(&sb, "-s", "workspace-write");
    assert_eq!(code, 0);
    holds(content(&planted), &["\nlinked\n"]);
    assert_eq!(read(&victim), "precious\n");
    // The summary went to the file rounds opened before the run.
    appended(&sb);
    // CONTROL: appending by the path, as a writer that opened it at the end would, reaches the
    // victim.
    append(&sb.ws().join("summary.md"), "pwned\n");
    assert_eq!(read(&victim), "precious\npwned\n");

    // A hard link: in the default sandbox, and without it (a kernel without Landlock).
    for sandbox in ["workspace-write", "off"] {
        let sb = Sandbox::new();
        let victim = make_victim(&sb);
        let (code, planted) = summary_swapped(&sb, "", sandbox);
        assert_eq!(code, 0);
        let made = hard_link_made(&planted);
        assert_eq!(made, sandbox == "off" || !confined(), "{planted}");
        assert_eq!(read(&victim), "precious\n");
        appended(&sb);
        if made {
            // CONTROL: the name is the victim.
            append(&sb.ws().join("summary.md"), "pwned\n");
            assert_eq!(read(&victim), "precious\npwned\n");
        }
    }
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// `--output-last-message PATH` of a run whose tool runs `plant`: the run, the tool's result
/// and the transcript's end line.
fn answer_after(sb: &Sandbox, plant: &str, path: &str, sandbox: &str) -> (Run, Value, Value) {
    let server = bash_rounds(&[plant]);
    let out = run(rounds(sb, &server)
        .args(["--transcript", "t.jsonl", "--sandbox", sandbox])
        .args(["--output-last-message", path, "go"]));
    let lines = read_jsonl(&sb.ws().join("t.jsonl"));
    let end = lines.last().unwrap().clone();
    assert_eq!(end["type"], "end");
    (out, result(&lines, "t1"), end)
}

#[test]
fn output_last_message_never_writes_through_a_link_planted_at_it_or_above_it() {
    // A symbolic link at the name: refused, and the run says so.
    let sb = Sandbox::new();
    let victim = make_victim(&sb);
    let plant = format!("ln -s '{}' answer.txt && echo linked", victim.display());
    let (out, planted, end) = answer_after(&sb, &plant, "answer.txt", "workspace-write");
    holds(content(&planted), &["\nlinked\n"]);
    assert_eq!(read(&victim), "precious\n");
    assert_eq!(out.code, 1, "{}", out.stderr);
    let error = end["error"].as_str().unwrap();
    holds(
        error,
        &["--output-last-message", "answer.txt: is a symbolic link"],
    );
    assert_eq!(end["status"], "error");
    holds(&out.stderr, &["answer.txt: is a symbolic link"]);
    // Nothing was made beside it either.
    assert_eq!(names(&sb.ws()), ["answer.txt", "t.jsonl"]);
    // CONTROL: a plain write by the path lands in the victim.
    std::fs::write(sb.ws().join("answer.txt"), "pwned").unwrap();
    assert_eq!(read(&victim), "pwned");

    // A hard link at the name: replaced by a new file, the victim untouched.
    for sandbox in ["workspace-write", "off"] {
        let sb = Sandbox::new();
        let victim = make_victim(&sb);
        let plant = format!("ln '{}' answer.txt && echo linked", victim.display());
        let (out, planted, end) = answer_after(&sb, &plant, "answer.txt", sandbox);
        let made = hard_link_made(&planted);
        assert_eq!(made, sandbox == "off" || !confined(), "{planted}");
        assert_eq!(
            (out.code, &end["status"]),
            (0, &json!("completed")),
            "{}",
            out.stderr
        );
        assert_eq!(read(&victim), "precious\n");
        assert_eq!(read(&sb.ws().join("answer.txt")), "done");
        assert_eq!(names(&sb.ws()), ["answer.txt", "t.jsonl"]);
        if made {
            // CONTROL: a hard link is the victim by another name; a write in place (truncate
            // and write, as `std::fs::write` does) changes the victim.
            std::fs::hard_link(&victim, sb.path("probe")).unwrap();
            std::fs::write(sb.path("probe"), "pwned").unwrap();
            assert_eq!(read(&victim), "pwned");
        }
    }

    // The directory above it swapped for a link to outside: the answer goes to the directory
    // rounds opened before the run.
    let sb = Sandbox::new();
    let outside = outside(&sb);
    std::fs::create_dir(sb.ws().join("sub")).unwrap();
    let plant = format!(
        "mv sub sub.moved && ln -s '{}' sub && echo linked",
        outside.display()
    );
    let (out, planted, end) = answer_after(&sb, &plant, "sub/answer.txt", "workspace-write");
    holds(content(&planted), &["\nlinked\n"]);
    assert_eq!(
        (out.code, &end["status"]),
        (0, &json!("completed")),
        "{}",
        out.stderr
    );
    assert_eq!(read(&sb.ws().join("sub.moved/answer.txt")), "done");
    untouched(&outside);
    leads_outside(&sb.ws().join("sub"), &outside);
}

#[test]
fn a_link_already_in_an_output_path_is_refused_by_name_before_anything_runs() {
    let sb = Sandbox::new();
    let outside = outside(&sb);
    let ws = sb.ws();
    // A link in the path, placed before the run (a tool of an earlier run, a hostile checkout).
    symlink(&outside, ws.join("link")).unwrap();
    let server = bash_rounds(&[]);
    // The message names the link, by the path as given.
    let named = |stderr: &str, link: &str| {
        holds(
            stderr,
            &[&format!(
                "{link}: is a symbolic link; rounds does not write through one"
            )],
        );
    };

    // The transcript: a usage error, and not one request.
    let out = run(rounds(&sb, &server).args(["--transcript", "link/t.jsonl", "go"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    named(&out.stderr, &ws.join("link").display().to_string());
    assert!(server.requests().is_empty());
    untouched(&outside);

    // The batch's --out, and its --junit: usage errors before any job.
    let jobs = jobs_file(&sb, 2);
    for args in [
        ["--out", "link/"].as_slice(),
        &["--out", "link/deeper"],
        &["--out", "out", "--junit", "link/junit.xml"],
    ] {
        let out = run(sb.anthropic(&server).arg("batch").arg(&jobs).args(args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        named(&out.stderr, ": link");
        assert!(server.requests().is_empty());
        untouched(&outside);
    }

    // The step summary: a warning, and the run goes on without one.
    let out =
        run(rounds(&sb, &server).args(["--no-transcript", "--step-summary", "link/s.md", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "done\n");
    holds(&out.stderr, &["cannot write the step summary"]);
    named(&out.stderr, "step summary: link");
    untouched(&outside);

    // CONTROL: a plain write through the same path lands outside.
    std::fs::write(ws.join("link/s.md"), "x").unwrap();
    assert!(outside.join("s.md").exists());
}

#[test]
fn a_step_summary_that_is_a_link_before_the_run_is_not_appended_to() {
    for hard in [false, true] {
        let sb = Sandbox::new();
        let victim = make_victim(&sb);
        let summary = sb.ws().join("s.md");
        if hard {
            std::fs::hard_link(&victim, &summary).unwrap();
        } else {
            symlink(&victim, &summary).unwrap();
        }
        let server = MockServer::start(vec![sse::answer("done")]);
        let out =
            run(rounds(&sb, &server).args(["--no-transcript", "--step-summary", "s.md", "go"]));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let why = if hard {
            "more than one link"
        } else {
            "is a symbolic link"
        };
        holds(&out.stderr, &["cannot write the step summary", why]);
        assert_eq!(read(&victim), "precious\n");
        // CONTROL: appending by the path reaches the victim.
        append(&summary, "pwned\n");
        assert_eq!(read(&victim), "precious\npwned\n");
    }
}
