#!/usr/bin/env bash
# The task suite against any OpenAI-compatible server (see run.py for the options):
#   bench/tasks/run.sh http://127.0.0.1:8081/v1 --runs 3 --rounds-bin target/release/rounds
set -euo pipefail
exec python3 "$(dirname "$0")/run.py" "$@"
