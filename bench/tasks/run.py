#!/usr/bin/env python3
"""Runs the small task suite against an OpenAI-compatible server and prints, per task,
how many runs solved it, the median wall time and the mean number of requests (rounds).

    bench/tasks/run.sh http://127.0.0.1:8081/v1 [--runs 3] [--rounds-bin PATH] [--model NAME]

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


def run_task(task, args):
    root = tempfile.mkdtemp(prefix="rounds-task-")
    ws = os.path.join(root, "ws")
    os.makedirs(ws)
    for rel, content in task["files"].items():
        p = os.path.join(ws, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(content)
    transcript = os.path.join(root, "t.jsonl")
    cmd = [args.rounds_bin, "-m", f"llamacpp/{args.model}", "--base-url", args.base_url,
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
    ap.add_argument("--rounds-bin", default=os.path.join(HERE, "../../target/release/rounds"))
    ap.add_argument("--model", default="qwen")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    tasks = json.load(open(os.path.join(HERE, "tasks.json")))
    if args.only:
        tasks = [t for t in tasks if t["id"] in args.only.split(",")]
    print(f"| task | solved | median time | mean requests | endings |")
    print("|---|---|---|---|---|")
    totals = {"solved": 0, "runs": 0, "time": 0.0, "timeouts": 0}
    for task in tasks:
        results = [run_task(task, args) for _ in range(args.runs)]
        solved = sum(1 for r in results if r[0])
        times = [r[1] for r in results]
        reqs = [r[2] for r in results]
        endings = ",".join(sorted({r[3] for r in results}))
        totals["solved"] += solved
        totals["runs"] += len(results)
        totals["time"] += sum(times)
        totals["timeouts"] += sum(1 for r in results if r[3] == "timeout")
        print(f"| {task['id']} | {solved}/{len(results)} | {statistics.median(times):.1f} s "
              f"| {statistics.mean(reqs):.1f} | {endings} |", flush=True)
    print(f"| **all** | {totals['solved']}/{totals['runs']} | {totals['time']:.0f} s in all "
          f"| | {totals['timeouts']} timeouts |")


if __name__ == "__main__":
    sys.exit(main())
