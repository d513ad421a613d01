#!/usr/bin/env bash
# The queue's benchmark (issue 26): jobs/s of 3-round mock jobs through 4 workers, and the time
# of one claim with 1,000 and with 100,000 jobs queued, against a PostgreSQL cluster of its own.
#
#   bench/queue/run.sh [ROUNDS_BINARY]     (default target/release/rounds)
#
# JOBS (2000), WORKERS (4) and PER_WORKER (--jobs of each worker, 8) may be set. The claim is
# timed with pgbench running the very statements the binary's schema version claims with
# (version 6 and later: an expired lease, then the first queued job; before: one statement
# over both), 200 claims each. Needs initdb, pg_ctl, psql and pgbench (PostgreSQL's binaries)
# and python3 for the mock.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rounds=$(realpath "${1:-$here/../../target/release/rounds}")
jobs=${JOBS:-2000}
workers=${WORKERS:-4}
per_worker=${PER_WORKER:-8}
pgbin=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$pgbin/initdb" ] || { echo "no PostgreSQL binaries (set PGBIN)" >&2; exit 2; }

dir=$(mktemp -d /tmp/rounds-bench-queue-XXXXXX)
as_pg=()
if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; as_pg=(runuser -u postgres --); fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mock_pid=
cleanup() {
  [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null || true
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
"${as_pg[@]}" "$pgbin/initdb" -D "$dir/data" -U rounds --auth=trust --no-locale --no-sync >/dev/null
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o \
  "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
url="postgres://rounds@127.0.0.1:$port/postgres"
psql() { "$pgbin/psql" -X -q -t -A "$@"; }

mkdir -p "$dir/ws" "$dir/home"
echo alpha > "$dir/ws/a.txt"
coproc MOCK { exec python3 "$here/mock.py"; }
mock_pid=$MOCK_PID
read -r mock_port <&"${MOCK[0]}"
run() {
  (cd "$dir/ws" && env -i PATH="$PATH" HOME="$dir/home" ROUNDS_HOME="$dir/home/state" \
    ANTHROPIC_API_KEY=bench ANTHROPIC_BASE_URL="http://127.0.0.1:$mock_port" "$rounds" "$@")
}
jobs_file() {
  python3 -c "import sys
for i in range(int(sys.argv[1])): print('{\"id\":\"j%d\",\"prompt\":\"Do j%d.\"}' % (i, i))" "$1" > "$2"
}

# Jobs per second: the batch queued, then 4 workers drain it.
jobs_file "$jobs" "$dir/jobs.jsonl"
db="$url?options=-csearch_path%3Dthroughput"
psql "$url" -c "CREATE SCHEMA throughput"
batch=$(run batch "$dir/jobs.jsonl" --store "$db" --enqueue --max-rounds 5)
# CPU seconds of a process (fields 14-15) or of its exited children (16-17), from /proc.
ticks=$(getconf CLK_TCK)
cpu() { awk -v a="$2" -v b="$3" -v t="$ticks" '{ sub(/^.*\) /, ""); printf "%.2f", ($(a-2) + $(b-2)) / t }' "/proc/$1/stat"; }
postmaster=$(head -1 "$dir/data/postmaster.pid")
pg_before=$(cpu "$postmaster" 16 17)
mock_before=$(cpu "$mock_pid" 14 15)
start=$(date +%s.%N)
pids=()
for w in $(seq "$workers"); do
  run batch --store "$db" --batch "$batch" --worker --jobs "$per_worker" --out "$dir/w$w" \
    >/dev/null 2>"$dir/w$w.err" &
  pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
end=$(date +%s.%N)
workers_cpu=$(cpu $$ 16 17)
pg_cpu=$(python3 -c "print(f'{$(cpu "$postmaster" 16 17) - $pg_before:.2f}')")
mock_cpu=$(python3 -c "print(f'{$(cpu "$mock_pid" 14 15) - $mock_before:.2f}')")
done_jobs=$(psql "$db" -c "SELECT count(*) FROM batch_jobs WHERE result->>'status' = 'completed'")
[ "$failed" = 0 ] || { echo "a worker failed:" >&2; cat "$dir"/w*.err >&2; }
python3 -c "import sys; j,s,e=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); \
print(f'jobs/s: {j/(e-s):.1f} ({j} of $jobs jobs completed in {e-s:.1f} s, $workers workers x --jobs $per_worker)')" \
  "$done_jobs" "$start" "$end"
echo "cpu seconds: workers $workers_cpu (with the enqueue), postgres $pg_cpu, mock $mock_cpu; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# One claim's time with N queued.
for n in 1000 100000; do
  schema="claims_$n"
  db="$url?options=-csearch_path%3D$schema"
  psql "$url" -c "CREATE SCHEMA $schema"
  jobs_file "$n" "$dir/claims.jsonl"
  batch=$(run batch "$dir/claims.jsonl" --store "$db" --enqueue --max-rounds 5)
  psql "$db" -c "ANALYZE batch_jobs"
  version=$(psql "$db" -c "SELECT max(version) FROM rounds_schema_migrations")
  set_lease="lease_owner = 'bench', lease_expires_at = now() + make_interval(secs => 60), \
attempts = j.attempts + 1, claimed_at = now()"
  if [ "$version" -ge 6 ]; then
    cat > "$dir/claim.sql" <<SQL
UPDATE batch_jobs j SET $set_lease, generation = j.generation + 1 WHERE (j.batch_id, j.job_id) IN (SELECT batch_id, job_id FROM batch_jobs WHERE batch_id = '$batch' AND state = 'running' AND lease_expires_at < now() AND attempts < 3 ORDER BY line LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING j.job_id, j.line, j.spec, j.runs, j.generation;
UPDATE batch_jobs j SET state = 'running', $set_lease, generation = j.generation + 1 WHERE (j.batch_id, j.job_id) IN (SELECT batch_id, job_id FROM batch_jobs WHERE batch_id = '$batch' AND state = 'queued' AND attempts < 3 ORDER BY line LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING j.job_id, j.line, j.spec, j.runs, j.generation;
SQL
  else
    cat > "$dir/claim.sql" <<SQL
UPDATE batch_jobs j SET state = 'running', $set_lease WHERE (j.batch_id, j.job_id) IN (SELECT batch_id, job_id FROM batch_jobs WHERE batch_id = '$batch' AND attempts < 3 AND (state = 'queued' OR (state = 'running' AND lease_expires_at < now())) ORDER BY line LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING j.job_id, j.line, j.spec, j.attempts, j.runs;
SQL
  fi
  latency=$(PGOPTIONS="-csearch_path=$schema" "$pgbin/pgbench" -n -M prepared -t 200 -c 1 \
    -f "$dir/claim.sql" -h 127.0.0.1 -p "$port" -U rounds postgres 2>&1 | sed -n 's/^latency average = //p')
  echo "claim with $n queued (schema version $version): $latency"
done
