#!/usr/bin/env bash
# Checks that rounds installs the way a Python user installs a CLI: builds the wheel
# (pyproject.toml: maturin, binary bindings, the dist profile) with maturin from PyPI, installs
# it with pip into a fresh virtualenv, and runs the README's quick start with the installed
# `rounds`, which must print the recorded answer and exit 0.
#
#   scripts/check-wheel.sh                      # the wheel as shipped (dist profile: LTO, slow)
#   scripts/check-wheel.sh --profile release    # arguments go to `maturin build`
#
# Needs python3 (with venv), a Rust toolchain and PyPI (for maturin). Not part of .ci/run: the
# dist build alone takes longer than CI's test run. Leaves the wheel in target/wheels/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d "${TMPDIR:-/tmp}/rounds-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$SECONDS
say() { printf 'check-wheel: %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

# maturin in a virtualenv of its own, in the range pyproject.toml's build-system asks for.
maturin_range=$(python3 -c 'import sys, tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"][0])' 2>/dev/null \
  || sed -n 's/^requires = \["\(maturin[^"]*\)"\]$/\1/p' pyproject.toml)
python3 -m venv "$work/maturin"
"$work/maturin/bin/pip" install --quiet --disable-pip-version-check "$maturin_range"
say "$("$work/maturin/bin/maturin" --version), building"

rm -rf target/wheels
"$work/maturin/bin/maturin" build --out target/wheels "$@"
wheels=(target/wheels/rounds-*.whl)
[ "${#wheels[@]}" = 1 ] && [ -f "${wheels[0]}" ] || fail "expected one wheel, got: ${wheels[*]}"
wheel=${wheels[0]}
say "built $wheel ($(du -k "$wheel" | cut -f1) KiB) after $((SECONDS - started)) s"

# The wheel is the binary and the package's metadata: no Python module to import.
contents=$(python3 -m zipfile -l "$wheel" | awk 'NR > 1 { print $1 }')
grep -qx 'rounds-[^/]*\.data/scripts/rounds' <<<"$contents" || fail "no scripts/rounds in the wheel"
if grep -v '^rounds-[^/]*\.dist-info/' <<<"$contents" | grep -vqx 'rounds-[^/]*\.data/scripts/rounds'; then
  fail "the wheel holds more than the binary: $contents"
fi

# A fresh virtualenv, installed from the file only (nothing from an index).
python3 -m venv "$work/env"
"$work/env/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel"
installed=$(PATH="$work/env/bin:/usr/bin:/bin"; command -v rounds) || fail "rounds is not on the venv's PATH"
[ "$installed" = "$work/env/bin/rounds" ] || fail "rounds resolves to $installed"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
[ "$("$installed" --version)" = "rounds $version" ] || fail "version: $("$installed" --version)"

# The README's quick start, with the installed binary in a clean environment: a home of its
# own (the transcript goes there), no key, stdin closed.
quick=$(grep -o -m1 -e '-m replay:[^`]*' README.md) || fail "no quick start in README.md"
read -ra args <<<"$quick"
expected=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["final_text"])' \
  fixtures/demo/demo.jsonl)
mkdir "$work/home"
code=0
out=$(env -i PATH="$work/env/bin:/usr/bin:/bin" HOME="$work/home" "$installed" "${args[@]}" \
  </dev/null 2>"$work/stderr") || code=$?
[ "$code" = 0 ] || fail "the quick start exited $code: $(cat "$work/stderr")"
[ "$out" = "$expected" ] || fail "the quick start printed something else:
$out"
transcripts=("$work"/home/.local/state/rounds/runs/*/*.jsonl)
[ -f "${transcripts[0]}" ] || fail "no transcript under the run's home"
tail -1 "${transcripts[0]}" | grep -q '"status":"completed"' || fail "the transcript's end is not completed"
git -C "$root" diff --quiet -- fixtures/demo || fail "the quick start changed fixtures/demo"

say "ok: pip installed $(basename "$wheel"); \`rounds ${args[*]}\` printed the recorded answer and exited 0 ($((SECONDS - started)) s in all)"
