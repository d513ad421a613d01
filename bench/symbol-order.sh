#!/usr/bin/env bash
# Regenerates bench/symbol-order.txt: the functions a typical run executes, which build.rs hands
# to the linker so they sit together in the binary. Without it they are spread over ~10 MB of
# code and the kernel maps most of it (64 KiB at a time) during a run: peak RSS 12.3 MiB against
# 7.4 MiB with it (see the README's benchmark). A stale file is harmless: names that no longer
# exist are skipped, and only the layout, never the behaviour, depends on it.
#
# Needs valgrind and python3. Run it after dependency upgrades: bash bench/symbol-order.sh
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}/symbol-order
# The release profile strips the binary, and callgrind needs its symbol names. They must be the
# names of the shipped build, and cargo mixes the profile (strip included) into every symbol's
# hash, while RUSTFLAGS only name the files: so the profile stays as it is and -C strip=none,
# given last, keeps the symbols.
ROUNDS_NO_SYMBOL_ORDER=1 RUSTFLAGS="-C strip=none" CARGO_TARGET_DIR="$target" \
  cargo build --release --quiet
bin="$target/release/rounds"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/ws/src" && printf 'fn main() {\n    println!("hi");\n}\n' > "$work/ws/src/main.rs"

calls=('{"name":"read_file","input":{"path":"src/main.rs"}}' '{"name":"grep","input":{"pattern":"main"}}'
       '{"name":"glob","input":{"pattern":"**/*.rs"}}' '{"name":"list_dir","input":{}}'
       '{"name":"bash","input":{"command":"echo hi"}}' '{"name":"write_file","input":{"path":"out.txt","content":"x"}}'
       '{"name":"edit_file","input":{"path":"out.txt","old_string":"x","new_string":"y"}}')
port=18690
for flavor in anthropic openai; do
  port=$((port + 1))
  python3 bench/mock_provider.py "$port" "$flavor" 21 "${calls[@]}" &
  sleep 0.5
  if [ "$flavor" = anthropic ]; then
    env_args=(ANTHROPIC_API_KEY=x ANTHROPIC_BASE_URL="http://127.0.0.1:$port")
    model=anthropic/m
  else
    env_args=(OPENAI_API_KEY=x OPENAI_BASE_URL="http://127.0.0.1:$port/v1")
    model=openai/m
  fi
  (cd "$work/ws" && env "${env_args[@]}" valgrind --tool=callgrind --demangle=no \
     --callgrind-out-file="$work/cg.$flavor.out" "$OLDPWD/$bin" -q -m "$model" -a all \
     --transcript "$work/t.$flavor.jsonl" --max-rounds 30 go > /dev/null 2>&1)
done
valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.replay.out" "$bin" -q \
  -m replay:fixtures/demo/demo.jsonl -w fixtures/demo/workspace --no-transcript > /dev/null 2>&1

python3 - "$work"/cg.*.out > bench/symbol-order.txt <<'PY'
import re, sys
seen, names = set(), []
for path in sys.argv[1:]:
    for line in open(path, errors="replace"):
        m = re.match(r"^c?fn=\(\d+\) (\S+)$", line.rstrip("\n"))
        # callgrind marks recursion levels as NAME'2, NAME'3: the same function.
        name = re.sub(r"'\d+$", "", m.group(1)) if m else None
        if name and name not in seen and not name.startswith("0x"):
            seen.add(name)
            names.append(name)
print("\n".join(names))
PY
echo "bench/symbol-order.txt: $(wc -l < bench/symbol-order.txt) functions"
