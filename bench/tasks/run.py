#!/usr/bin/env python3
"""Runs the small task suite against an OpenAI-compatible server and prints, per task,
how many runs solved it, the median wall time, the mean number of requests (rounds), and how
the runs that failed went wrong (read from each run's transcript).

    bench/tasks/run.sh http://127.0.0.1:8081/v1 [--runs 3] [--rounds-bin PATH]... [--model NAME]
                       [--only ID,ID] [--json OUT]

With several --rounds-bin, the binaries take turns task by task and run by run (so a busy
machine slows them alike), and a table is printed for each. A --rounds-bin may carry flags
after the path, shell-quoted, to compare variants of one binary in the same session:
    --rounds-bin target/debug/rounds \
    --rounds-bin "target/debug/rounds --append-system-prompt 'Read the files before answering.'"

Each run gets a fresh copy of the task's files as its workspace. A task may name extra flags
("args": [...]) and a check that decides when the run is done ("rounds_check": "CMD"): it is
passed as `--check CMD` only to a binary whose --help lists --check, so an older binary runs the
same task without it.

The "how it went wrong" columns count runs (a run can count in several):
  no_tool     answered without any tool call
  text_call   a response whose text holds a tool call (`"name"` + `"arguments"`/`"parameters"`,
              or `<tool_call>`) that was not run as one
  from_text   a tool call rounds recognised in the text and ran (its id is call_from_text_…)
  code_answer an answer (no call) showing code in a fenced block, in a task that edits files
  text_edit   an edit rounds read from an answer's code and ran (its id is edit_from_text_…)
  edit_miss   an edit_file whose old_string did not match
  stuck       the loop guards saw a repeated call (repeated/stuck), or the run ended `stuck`
  wrote       a question task (its check reads only the answer) that wrote or edited a file

A measuring tool, not a test: a small model is not deterministic, so compare several runs of the
same binary and server."""
import argparse, json, os, re, shlex, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ["no_tool", "text_call", "from_text", "code_answer", "text_edit", "edit_miss", "stuck",
         "wrote"]
WRITERS = {"write_file", "edit_file"}
# The id prefix of the calls rounds read from a response's text (a local server's).
FROM_TEXT = "call_from_text_"
# The id prefix of the edits rounds read from an answer's code (a local server's).
EDIT_FROM_TEXT = "edit_from_text_"


def check(task, answer, ws):
    c = task["check"]
    low = answer.lower()
    for want in c.get("answer_contains", []):
        if want.lower() not in low:
            return False
    for path, want in c.get("file_contains", {}).items():
        p = os.path.join(ws, path)
        if not os.path.exists(p) or want not in open(p).read():
            return False
    for path, bad in c.get("file_lacks", {}).items():
        p = os.path.join(ws, path)
        if os.path.exists(p) and bad in open(p).read():
            return False
    for path, want in c.get("file_trimmed", {}).items():
        p = os.path.join(ws, path)
        if not os.path.exists(p) or open(p).read().strip() != want:
            return False
    for path in c.get("file_unchanged", []):
        p = os.path.join(ws, path)
        if not os.path.exists(p) or open(p).read() != task["files"][path]:
            return False
    for path, want in c.get("json_value", {}).items():
        try:
            if json.load(open(os.path.join(ws, path))) != want:
                return False
        except (OSError, ValueError):
            return False
    for cmd in c.get("command_succeeds", []):
        try:
            r = subprocess.run(cmd, shell=True, cwd=ws, capture_output=True, timeout=60)
        except subprocess.TimeoutExpired:
            return False
        if r.returncode != 0:
            return False
    return True


def text_call(text):
    return "<tool_call>" in text or ('"name"' in text and (
        '"arguments"' in text or '"parameters"' in text))


def is_question(task):
    """A task whose check reads only the answer: writing a file there is a failure mode."""
    return set(task["check"]) == {"answer_contains"}


def snapshot(ws):
    out = {}
    for d, dirs, files in os.walk(ws):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for f in files:
            p = os.path.join(d, f)
            try:
                out[os.path.relpath(p, ws)] = open(p, "rb").read()
            except OSError:
                pass
    return out


def classify(task, rounds, status, before, after):
    """The failure modes one run shows, as a set of KINDS."""
    kinds, calls = set(), 0
    for r in rounds:
        texts = [b.get("text", "") for b in r.get("blocks", []) if b.get("type") == "text"]
        uses = [b for b in r.get("blocks", []) if b.get("type") == "tool_use"]
        calls += len(uses)
        if any(u.get("id", "").startswith(EDIT_FROM_TEXT) for u in uses):
            kinds.add("text_edit")
        if not uses and not is_question(task) and any("```" in t for t in texts):
            kinds.add("code_answer")
        if any(u.get("id", "").startswith(FROM_TEXT) for u in uses):
            kinds.add("from_text")
        elif not uses and any(text_call(t) for t in texts):
            kinds.add("text_call")
        for res in r.get("results", []):
            if res.get("name") == "edit_file" and res.get("is_error") \
                    and "old_string was not found" in res.get("content", ""):
                kinds.add("edit_miss")
        if any(g.get("kind") in ("repeated", "stuck") for g in r.get("guards", [])):
            kinds.add("stuck")
        if is_question(task) and any(u.get("name") in WRITERS for u in uses):
            kinds.add("wrote")
    if calls == 0 and rounds:
        kinds.add("no_tool")
    if status == "stuck":
        kinds.add("stuck")
    if is_question(task) and before != after:
        kinds.add("wrote")
    return kinds


_HELP = {}


def has_check_flag(rounds_bin):
    if rounds_bin not in _HELP:
        try:
            out = subprocess.run([rounds_bin, "--help"], capture_output=True, text=True).stdout
        except OSError:
            out = ""
        _HELP[rounds_bin] = re.search(r"^\s*(-\w, )?--check[ =<\n]", out, re.M) is not None
    return _HELP[rounds_bin]


def run_task(task, args, rounds_bin):
    root = tempfile.mkdtemp(prefix="rounds-task-")
    ws = os.path.join(root, "ws")
    os.makedirs(ws)
    for rel, content in task["files"].items():
        p = os.path.join(ws, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(content)
    before = snapshot(ws)
    transcript = os.path.join(root, "t.jsonl")
    spec = rounds_bin
    rounds_bin, *variant = shlex.split(spec)
    cmd = [rounds_bin, "-m", f"llamacpp/{args.model}", "--base-url", args.base_url,
           "-w", ws, "--transcript", transcript, "--timeout", str(args.timeout),
           "--max-rounds", "10", "--temperature", "0", "--no-stdin", "-q"]
    if task["allow"]:
        cmd += ["-a", task["allow"]]
    checked = bool(task.get("rounds_check")) and has_check_flag(rounds_bin)
    if checked:
        cmd += ["--check", task["rounds_check"]]
    cmd += task.get("args", []) + variant
    cmd.append(task["prompt"])
    started = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    took = time.monotonic() - started
    rounds, status = [], "?"
    try:
        for line in open(transcript):
            rec = json.loads(line)
            if rec["type"] == "round":
                rounds.append(rec)
            if rec["type"] == "end":
                status = rec["status"]
    except (OSError, ValueError):
        pass
    solved = check(task, out.stdout, ws)
    kinds = classify(task, rounds, status, before, snapshot(ws))
    if args.keep and not solved and os.path.exists(transcript):
        # The transcripts of the runs that failed: what to read to see why.
        os.makedirs(args.keep, exist_ok=True)
        n = len(os.listdir(args.keep))
        shutil.copy(transcript, os.path.join(args.keep, f"{n:03}-{task['id']}.jsonl"))
    shutil.rmtree(root, ignore_errors=True)
    return {"task": task["id"], "bin": spec, "solved": solved, "secs": round(took, 2),
            "requests": len(rounds), "status": status, "exit": out.returncode,
            "checked": checked, "kinds": sorted(kinds), "answer": out.stdout[-2000:],
            "stderr": out.stderr[-2000:]}


def table(b, tasks, results):
    print(f"\n{b}\n")
    print("| task | solved | median time | mean requests | endings | "
          + " | ".join(KINDS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(KINDS))
    solved_all = runs_all = limits = 0
    time_all = 0.0
    totals = {k: 0 for k in KINDS}
    for task in tasks:
        rs = results[b][task["id"]]
        solved = sum(1 for r in rs if r["solved"])
        times = [r["secs"] for r in rs]
        endings = ",".join(sorted({r["status"] for r in rs}))
        counts = {k: sum(1 for r in rs if k in r["kinds"]) for k in KINDS}
        for k in KINDS:
            totals[k] += counts[k]
        solved_all += solved
        runs_all += len(rs)
        time_all += sum(times)
        limits += sum(1 for r in rs if r["status"] in ("timeout", "max_rounds"))
        print(f"| {task['id']} | {solved}/{len(rs)} | {statistics.median(times):.1f} s "
              f"| {statistics.mean(r['requests'] for r in rs):.1f} | {endings} | "
              + " | ".join(str(counts[k]) for k in KINDS) + " |")
    print(f"| **all** | {solved_all}/{runs_all} | {time_all:.0f} s in all | | "
          f"{limits} by time/round limit | " + " | ".join(str(totals[k]) for k in KINDS) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base_url")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds-bin", action="append", default=[])
    ap.add_argument("--model", default="qwen")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--only", default="", help="comma-separated task ids")
    ap.add_argument("--json", metavar="OUT", default="",
                    help="write every run's raw result (a JSON list) to OUT")
    ap.add_argument("--keep", metavar="DIR", default="",
                    help="copy the transcript of every run that did not solve its task to DIR")
    args = ap.parse_args()
    bins = args.rounds_bin or [os.path.join(HERE, "../../target/release/rounds")]
    tasks = json.load(open(os.path.join(HERE, "tasks.json")))
    if args.only:
        tasks = [t for t in tasks if t["id"] in args.only.split(",")]
    results = {b: {t["id"]: [] for t in tasks} for b in bins}
    raw = []
    for task in tasks:
        for _ in range(args.runs):
            for b in bins:
                r = run_task(task, args, b)
                results[b][task["id"]].append(r)
                raw.append(r)
                print(f"# {task['id']} {b}: solved={r['solved']} "
                      f"{r['secs']:.1f}s {r['requests']} requests {r['status']} "
                      f"{','.join(r['kinds'])}", file=sys.stderr, flush=True)
                if args.json:
                    with open(args.json, "w") as f:
                        json.dump(raw, f, indent=1)
    for b in bins:
        table(b, tasks, results)


if __name__ == "__main__":
    sys.exit(main())
