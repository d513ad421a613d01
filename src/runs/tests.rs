use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::os::unix::fs::symlink;

fn start_line(run_id: &str, workspace: &str, resumed_from: Option<&Path>) -> String {
    json!({"v": 1, "type": "start", "run_id": run_id, "time": "2026-01-02T13:04:05.123Z",
        "provider": "anthropic", "model": "claude-test", "workspace": workspace,
        "prompt": "Fix the build\nand say why", "system": "s", "tools": ["read_file"],
        "limits": {"max_rounds": 25, "max_tokens": null, "budget_tokens": null,
            "timeout_secs": null, "tool_timeout_secs": 30.0, "max_parallel": 8},
        "resumed_from": resumed_from.map(|p| p.display().to_string())})
    .to_string()
}

fn round_line(n: u32) -> String {
    json!({"v": 1, "type": "round", "round": n, "time": "t", "blocks": [], "results": [],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1},
        "model_ms": 1, "tools_ms": 0})
    .to_string()
}

fn end_line(status: &str, code: u8, rounds: u32) -> String {
    json!({"v": 1, "type": "end", "status": status, "exit_code": code, "rounds": rounds,
        "final_text": "done", "usage": {"input_tokens": 120, "output_tokens": 30,
        "cache_read_tokens": 900}, "cost_usd": 0.0123, "duration_ms": 5, "error": null})
    .to_string()
}

/// Writes `runs/DAY/ID.jsonl` with `lines`, and returns its path.
fn put(runs: &Path, id: &str, lines: &[String]) -> PathBuf {
    let day = day_of(id).unwrap();
    let path = runs.join(day).join(format!("{id}.jsonl"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    path
}

fn age(path: &Path, days: u64) {
    let when = SystemTime::now() - Duration::from_secs(days * 86_400);
    let file = File::options().write(true).open(path).unwrap_or_else(|_| {
        // A folder: its own times are set through a handle opened for reading.
        File::open(path).unwrap()
    });
    file.set_modified(when).unwrap();
}

#[test]
fn ids_sort_by_time_to_the_millisecond_and_name_their_day() {
    let t: jiff::Timestamp = "2026-01-02T23:59:59.998Z".parse().unwrap();
    let a = new_id(t, 0xffff_ffff);
    let b = new_id(t + jiff::SignedDuration::from_millis(1), 0);
    let c = new_id(t + jiff::SignedDuration::from_millis(2), 0);
    assert_eq!(a, "20260102T235959.998Z-ffffffff");
    assert_eq!(c, "20260103T000000.000Z-00000000");
    assert!(a < b && b < c, "{a} {b} {c}");
    assert!(is_run_id(&a));
    let home = Path::new("/h");
    assert_eq!(
        transcript_path(home, &c),
        Path::new("/h/runs/2026-01-03/20260103T000000.000Z-00000000.jsonl")
    );
    // The outputs folder sits beside the transcript with the same id.
    assert_eq!(
        transcript_path(home, &c).with_extension("outputs"),
        Path::new("/h/runs/2026-01-03/20260103T000000.000Z-00000000.outputs")
    );
    for bad in ["", ".hidden", "../x", "a/b", "a b"] {
        assert!(!is_run_id(bad), "{bad:?}");
    }
}

#[test]
fn the_newest_run_overall_and_for_a_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let old = put(
        &runs,
        "20260101T100000.000Z-00000001",
        &[start_line("a", "/ws/one", None)],
    );
    let mid = put(
        &runs,
        "20260102T090000.001Z-00000002",
        &[start_line("b", "/ws/two", None)],
    );
    // Same second as `mid`'s day-mate, a millisecond later.
    let new = put(
        &runs,
        "20260102T090000.002Z-00000000",
        &[start_line("c", "/ws/one", None)],
    );
    // Not a transcript: skipped.
    std::fs::create_dir_all(runs.join("2026-01-02/20260102T090000.002Z-00000000.outputs")).unwrap();
    assert_eq!(newest(&runs, None), Some(new.clone()));
    assert_eq!(newest(&runs, Some(Path::new("/ws/one"))), Some(new));
    assert_eq!(newest(&runs, Some(Path::new("/ws/two"))), Some(mid));
    assert_eq!(newest(&runs, Some(Path::new("/ws/three"))), None);
    assert_eq!(newest(&dir.path().join("none"), None), None);
    assert_eq!(
        find(&runs, "20260101T100000.000Z-00000001"),
        Some(old.clone())
    );
    // An id whose day folder was renamed is still found.
    std::fs::rename(runs.join("2026-01-01"), runs.join("moved")).unwrap();
    assert!(find(&runs, "20260101T100000.000Z-00000001").is_some());
    assert_eq!(find(&runs, "../../etc/passwd"), None);
    assert_eq!(find(&runs, "20990101T000000.000Z-0"), None);
}

#[test]
fn a_summary_reads_the_first_and_last_lines() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let done = put(
        &runs,
        "20260102T130405.123Z-0000000a",
        &[
            start_line("r1", "/ws", None),
            round_line(1),
            round_line(2),
            end_line("max_rounds", 3, 2),
        ],
    );
    let s = summarize(&done);
    assert_eq!(
        (
            s.run_id.as_str(),
            s.status.as_str(),
            s.rounds,
            s.prompt.as_str()
        ),
        ("r1", "max_rounds", 2, "Fix the build")
    );
    assert_eq!(s.usage.map(|u| u.input_total()), Some(1020));
    assert_eq!(s.cost_usd, Some(0.0123));
    // Killed after two rounds, with its third cut off mid-line.
    let killed = put(
        &runs,
        "20260102T130406.000Z-0000000b",
        &[start_line("r2", "/ws", None), round_line(1), round_line(2)],
    );
    let s = summarize(&killed);
    assert_eq!(
        (s.status.as_str(), s.rounds, s.usage),
        ("unfinished", 2, None)
    );
    let mut torn = std::fs::read_to_string(&killed).unwrap();
    torn.push_str(r#"{"v":1,"type":"round","rou"#);
    std::fs::write(&killed, torn).unwrap();
    let s = summarize(&killed);
    assert_eq!(s.status, "unfinished");
    assert!(s.error.unwrap().contains("last line"));
    // Only a start line.
    let fresh = put(
        &runs,
        "20260102T130407.000Z-0000000c",
        &[start_line("r3", "/ws", None)],
    );
    assert_eq!(summarize(&fresh).rounds, 0);
    let junk = runs.join("2026-01-02/junk.jsonl");
    std::fs::write(&junk, "not json\n").unwrap();
    assert_eq!(summarize(&junk).status, "unreadable");
    assert_eq!(list(&runs, 2).len(), 2);
    assert_eq!(list(&runs, 0).len(), 4);
}

#[test]
fn a_long_last_line_is_found_across_read_windows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let long = "x".repeat(300 * 1024);
    std::fs::write(&path, format!("first\n{long}\n")).unwrap();
    let mut f = File::open(&path).unwrap();
    assert_eq!(last_line(&mut f).unwrap().len(), long.len());
    std::fs::write(&path, "only").unwrap();
    let mut f = File::open(&path).unwrap();
    assert_eq!(last_line(&mut f).unwrap(), b"only");
}

#[test]
fn ages_have_a_unit() {
    assert_eq!(parse_age("30d"), Ok(Duration::from_secs(30 * 86_400)));
    assert_eq!(parse_age("12h"), Ok(Duration::from_secs(12 * 3600)));
    assert_eq!(parse_age("2w"), Ok(Duration::from_secs(14 * 86_400)));
    assert_eq!(parse_age("90m"), Ok(Duration::from_secs(5400)));
    for bad in [
        "",
        "30",
        "d",
        "0d",
        "-1d",
        "1.5d",
        "3y",
        "99999999999999999999w",
    ] {
        assert!(parse_age(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn prune_removes_old_runs_with_their_outputs_and_keeps_what_newer_runs_need() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let line = |id| start_line(id, "/ws", None);
    let old = put(&runs, "20250101T000000.000Z-00000001", &[line("old")]);
    std::fs::create_dir_all(old.with_extension("outputs").join("sub")).unwrap();
    std::fs::write(old.with_extension("outputs").join("sub/out-1.txt"), "12345").unwrap();
    // Old, but resumed (through another old run) by a recent one.
    let base = put(&runs, "20250102T000000.000Z-00000002", &[line("base")]);
    let middle = put(
        &runs,
        "20250103T000000.000Z-00000003",
        &[start_line("middle", "/ws", Some(&base))],
    );
    let recent = put(
        &runs,
        "20260101T000000.000Z-00000004",
        &[start_line("recent", "/ws", Some(&middle))],
    );
    // An old outputs folder whose transcript is gone, and one that is a symlink.
    let orphan = runs.join("2025-01-01/20250101T000001.000Z-00000005.outputs");
    std::fs::create_dir_all(&orphan).unwrap();
    let victim = dir.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("keep.txt"), "precious").unwrap();
    let linked = put(&runs, "20250101T000002.000Z-00000006", &[line("linked")]);
    symlink(&victim, linked.with_extension("outputs")).unwrap();
    for path in [&old, &base, &middle, &linked, &orphan] {
        age(path, 100);
    }
    let cutoff = SystemTime::now() - Duration::from_secs(30 * 86_400);

    let dry = prune(&runs, cutoff, true);
    assert_eq!(dry.removed.len(), 5, "{:?}", dry.removed);
    assert!(old.exists() && orphan.exists());

    let pruned = prune(&runs, cutoff, false);
    assert_eq!(pruned.removed, dry.removed);
    assert!(pruned.errors.is_empty(), "{:?}", pruned.errors);
    assert_eq!(pruned.bytes, dry.bytes);
    for gone in [&old, &old.with_extension("outputs"), &orphan, &linked] {
        assert!(
            std::fs::symlink_metadata(gone).is_err(),
            "{}",
            gone.display()
        );
    }
    assert!(std::fs::symlink_metadata(linked.with_extension("outputs")).is_err());
    assert_eq!(
        std::fs::read_to_string(victim.join("keep.txt")).unwrap(),
        "precious"
    );
    for kept in [&base, &middle, &recent] {
        assert!(kept.exists(), "{}", kept.display());
    }
    assert_eq!(pruned.kept.len(), 2);
    // The emptied day folder went; the others hold kept runs.
    assert!(!runs.join("2025-01-01").exists());
    assert!(runs.join("2025-01-02").exists());
}
