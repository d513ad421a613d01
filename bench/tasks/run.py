#!/usr/bin/env python3
"""Runs the small task suite against an OpenAI-compatible server and prints, per task,
how many runs solved it, the median wall time and the mean number of requests (rounds).

    bench/tasks/run.sh http://127.0.0.1:8081/v1 [--runs 3] [--rounds-bin PATH]... [--model NAME]

With several --rounds-bin, the binaries take turns task by task and run by run (so a busy
machine slows them alike), and a table is printed for each.

Each run gets a fresh copy of the task's files as its workspace. A measuring tool, not a test:
a small model is not deterministic, so compare several runs of the same binary and server."""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))


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
    for path, want in c.get("json_value", {}).items():
        try:
            if json.load(open(os.path.join(ws, path))) != want:
                return False
        except (OSError, ValueError):
            return False
    return True


def run_task(task, args, rounds_bin):
    root = tempfile.mkdtemp(prefix="rounds-task-")
    ws = os.path.join(root, "ws")
    os.makedirs(ws)
    for rel, content in task["files"].items():
        p = os.path.join(ws, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(content)
    transcript = os.path.join(root, "t.jsonl")
    cmd = [rounds_bin, "-m", f"llamacpp/{args.model}", "--base-url", args.base_url,
           "-w", ws, "--transcript", transcript, "--timeout", str(args.timeout),
           "--max-rounds", "10", "--no-stdin", "-q"]
    if task["allow"]:
        cmd += ["-a", task["allow"]]
    cmd.append(task["prompt"])
    started = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    took = time.monotonic() - started
    requests, status = 0, "?"
    try:
        for line in open(transcript):
            rec = json.loads(line)
            if rec["type"] == "round":
                requests += 1
            if rec["type"] == "end":
                status = rec["status"]
    except (OSError, ValueError):
        pass
    solved = check(task, out.stdout, ws)
    shutil.rmtree(root, ignore_errors=True)
    return solved, took, requests, status, out.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base_url")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds-bin", action="append", default=[])
    ap.add_argument("--model", default="qwen")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    bins = args.rounds_bin or [os.path.join(HERE, "../../target/release/rounds")]
    tasks = json.load(open(os.path.join(HERE, "tasks.json")))
    if args.only:
        tasks = [t for t in tasks if t["id"] in args.only.split(",")]
    results = {b: {t["id"]: [] for t in tasks} for b in bins}
    for task in tasks:
        for _ in range(args.runs):
            for b in bins:
                r = run_task(task, args, b)
                results[b][task["id"]].append(r)
                print(f"# {task['id']} {os.path.basename(b)}: solved={r[0]} {r[1]:.1f}s "
                      f"{r[2]} requests {r[3]}", file=sys.stderr, flush=True)
    for b in bins:
        print(f"\n{b}\n")
        print("| task | solved | median time | mean requests | endings |")
        print("|---|---|---|---|---|")
        solved_all = runs_all = timeouts = 0
        time_all = 0.0
        for task in tasks:
            rs = results[b][task["id"]]
            solved = sum(1 for r in rs if r[0])
            times = [r[1] for r in rs]
            endings = ",".join(sorted({r[3] for r in rs}))
            solved_all += solved
            runs_all += len(rs)
            time_all += sum(times)
            timeouts += sum(1 for r in rs if r[3] == "timeout")
            print(f"| {task['id']} | {solved}/{len(rs)} | {statistics.median(times):.1f} s "
                  f"| {statistics.mean(r[2] for r in rs):.1f} | {endings} |")
        print(f"| **all** | {solved_all}/{runs_all} | {time_all:.0f} s in all | | "
              f"{timeouts} timeouts |")


if __name__ == "__main__":
    sys.exit(main())
