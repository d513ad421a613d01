#!/usr/bin/env bash
# Builds what a release hands to people, and checks it the way they will use it. Everything
# .github/workflows/release.yml does is a command of this script, so a release can be rehearsed
# on any Linux machine:
#
#   scripts/dist.sh build [TARGET] [DIR]  # one build: DIR/rounds-V-TARGET.tar.gz and the wheel
#   scripts/dist.sh sums [DIR]            # DIR/SHA256SUMS over the tarballs and wheels
#   scripts/dist.sh check [DIR]           # installs this machine's tarball and wheel into fresh
#                                         # directories and runs the README's quick start
#   scripts/dist.sh check-version TAG [REPOSITORY_URL]
#   scripts/dist.sh publish-github TAG [DIR]  # gh: a draft release, its assets, then published
#   scripts/dist.sh publish-pypi [DIR]        # the wheels, by PyPI's trusted publishing
#   scripts/dist.sh version | host | targets | asset-name TARGET | tools
#
# DIR defaults to dist/. TARGET defaults to this machine's glibc target. One build per target
# gives both artifacts: maturin builds the wheel (pyproject.toml: binary bindings, the `dist`
# profile) with zig as the linker, which links against glibc 2.17's symbols whatever the build
# machine's glibc is, and the tarball holds the very same binary. maturin and zig come from
# PyPI, pinned below, into target/dist-tools; nothing else beyond rustup's target is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The oldest glibc the gnu builds run on: Rust's own floor, what manylinux2014 means (CentOS 7,
# Amazon Linux 2 and every runner GitHub has). Raising it gains nothing rounds uses.
GLIBC_FLOOR=2.17
TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
# Bumped together: CI proves the pair.
TOOLS=(maturin==1.16.0 ziglang==0.17.0)
PUBLISHER=uv==0.13.9
tools_dir=$root/target/dist-tools

say() { printf 'dist: %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

version() { sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml; }
repository() { sed -n '/^\[workspace.package\]/,/^\[/s/^repository = "\(.*\)"$/\1/p' Cargo.toml; }
host() {
  local libc=gnu
  if ldd --version 2>&1 | grep -qi musl; then libc=musl; fi
  echo "$(uname -m)-unknown-linux-$libc"
}
# The archive's name, which cargo-binstall's pkg-url in Cargo.toml renders too
# (tests/suite/dist.rs holds them to each other).
asset_name() { echo "rounds-$(version)-$1.tar.gz"; }
# The wheels built for TARGET (a glob): maturin names them by tag, not by target.
wheel_glob() {
  local arch=${1%%-*}
  case $1 in
    *-gnu) echo "rounds-$(version)-py3-none-manylinux*_$arch.whl" ;;
    *-musl) echo "rounds-$(version)-py3-none-musllinux*_$arch.whl" ;;
  esac
}
known_target() {
  local t
  for t in "${TARGETS[@]}"; do [ "$t" = "$1" ] && return 0; done
  fail "unknown target $1 (one of: ${TARGETS[*]})"
}

tools() {
  if [ ! -x "$tools_dir/bin/maturin" ] || ! "$tools_dir/bin/pip" freeze 2>/dev/null | grep -qx "${TOOLS[0]}"; then
    python3 -m venv --clear "$tools_dir"
    "$tools_dir/bin/pip" install --quiet --disable-pip-version-check "${TOOLS[@]}"
  fi
  # maturin finds zig as `python3 -m ziglang` of the interpreter on PATH.
  export PATH="$tools_dir/bin:$PATH"
}

# The highest GLIBC_x.y version a binary needs, or nothing for a static one.
glibc_needed() {
  readelf -W --version-info --dyn-syms "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' \
    | sort -t. -k1,1n -k2,2n -k3,3n | tail -1
}

# What the loader and the floor ask of a binary: a gnu build needs nothing newer than the
# floor and no packed relocations (glibc < 2.36 refuses to load them); a musl build is static.
check_elf() {
  local bin=$1 target=$2 needed
  case $target in
    *-gnu)
      needed=$(glibc_needed "$bin")
      [ -n "$needed" ] || fail "$bin: no glibc symbol versions (is it a gnu build?)"
      [ "$(printf '%s\n%s\n' "$needed" "$GLIBC_FLOOR" | sort -V | tail -1)" = "$GLIBC_FLOOR" ] \
        || fail "$bin needs glibc $needed, above the floor $GLIBC_FLOOR"
      if readelf -W -d "$bin" | grep -q '(RELR)' || readelf -W -V "$bin" | grep -q GLIBC_ABI_DT_RELR; then
        fail "$bin has packed relocations: glibc before 2.36 cannot load it"
      fi
      say "$(basename "$bin") for $target needs glibc $needed (floor $GLIBC_FLOOR), no packed relocations"
      ;;
    *-musl)
      if readelf -W -l "$bin" | grep -q INTERP; then fail "$bin asks for a dynamic loader: not static"; fi
      say "$(basename "$bin") for $target is static"
      ;;
  esac
}

# Whether this machine runs TARGET's binaries natively (x86_64 runs both x86_64 builds).
runs_here() { [ "${1%%-*}" = "$(uname -m)" ]; }

build() {
  local target=${1:-$(host)} out=${2:-dist} v compat started=$SECONDS
  known_target "$target"
  v=$(version)
  # The standard library for the target comes from rustup; offline machines may lack it.
  if [ ! -d "$(rustc --print target-libdir --target "$target" 2>/dev/null)" ]; then
    rustup target add "$target" 2>/dev/null || true
  fi
  if [ ! -d "$(rustc --print target-libdir --target "$target" 2>/dev/null)" ]; then
    [ -z "${GITHUB_ACTIONS:-}${ROUNDS_DIST_STRICT:-}" ] || fail "no standard library for $target"
    say "skipping $target: its standard library is not installed (rustup target add $target)"
    return 0
  fi
  case $target in
    *-gnu) compat="manylinux_${GLIBC_FLOOR/./_}" ;;
    *-musl) compat=musllinux_1_2 ;;
  esac
  command -v readelf >/dev/null || fail "readelf is needed to check the binary (Debian: apt-get install binutils)"
  tools
  mkdir -p "$out"
  # Reproducible: the same commit gives the same archive (timestamps from the commit).
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || echo 0)
  export SOURCE_DATE_EPOCH
  # build.rs would link packed relocations where the build machine's glibc reads them, which
  # makes a binary that older glibc refuses to load.
  export ROUNDS_NO_RELR=1
  local pattern old
  pattern=$(wheel_glob "$target")
  for old in "$out"/$pattern; do [ ! -e "$old" ] || rm -f "$old"; done
  say "building $target ($compat) with $(maturin --version)"
  maturin build --zig --locked --target "$target" --compatibility "$compat" pypi --out "$out" >&2
  local bin=target/$target/dist/rounds
  [ -x "$bin" ] || fail "maturin left no $bin"
  check_elf "$bin" "$target"

  local name=rounds-$v-$target stage
  stage=$(mktemp -d "${TMPDIR:-/tmp}/rounds-dist.XXXXXX")
  mkdir -p "$stage/$name/complete" "$stage/$name/doc"
  cp "$bin" "$stage/$name/rounds"
  cp README.md LICENSE-MIT LICENSE-APACHE "$stage/$name/"
  if runs_here "$target"; then
    [ "$("$bin" --version)" = "rounds $v" ] || fail "$bin --version: $("$bin" --version)"
    "$bin" completions bash >"$stage/$name/complete/rounds.bash"
    "$bin" completions zsh >"$stage/$name/complete/_rounds"
    "$bin" completions fish >"$stage/$name/complete/rounds.fish"
    "$bin" man >"$stage/$name/doc/rounds.1"
  else
    say "not running $target's binary here: the archive has no completions or man page"
    rmdir "$stage/$name/complete" "$stage/$name/doc"
  fi
  tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
  rm -rf "$stage"
  say "wrote $out/$name.tar.gz ($(du -k "$out/$name.tar.gz" | cut -f1) KiB) in $((SECONDS - started)) s"
}

sums() {
  local dir=${1:-dist}
  (
    cd "$dir"
    shopt -s nullglob
    local files=(rounds-*.tar.gz rounds-*.whl)
    [ "${#files[@]}" -gt 0 ] || fail "nothing to sum in $dir"
    printf '%s\n' "${files[@]}" | LC_ALL=C sort | xargs sha256sum >SHA256SUMS
  )
  say "wrote $dir/SHA256SUMS ($(wc -l <"$dir/SHA256SUMS") files)"
}

# The README's quick start, run by the installed binary $1 in a clean environment: a home of
# its own, no key, no Rust on PATH, stdin closed. It must print the recorded answer.
quick_start() {
  local bin=$1 work=$2 what=$3 quick out code=0 expected
  quick=$(grep -o -m1 -e '-m replay:[^`]*' README.md) || fail "no quick start in README.md"
  read -ra args <<<"$quick"
  expected=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["final_text"])' \
    fixtures/demo/demo.jsonl)
  local path
  path="$(dirname "$bin"):/usr/bin:/bin"
  if env -i PATH="$path" sh -c 'command -v cargo || command -v rustc' >/dev/null; then
    fail "cargo or rustc is on the clean PATH ($path): the check would not show a Rust-free install"
  fi
  mkdir -p "$work/home"
  out=$(env -i PATH="$path" HOME="$work/home" "$bin" "${args[@]}" </dev/null 2>"$work/stderr") || code=$?
  [ "$code" = 0 ] || fail "$what: the quick start exited $code: $(cat "$work/stderr")"
  [ "$out" = "$expected" ] || fail "$what: the quick start printed something else:
$out"
  local transcripts=("$work"/home/.local/state/rounds/runs/*/*.jsonl)
  [ -f "${transcripts[0]}" ] || fail "$what: no transcript under the run's home"
  tail -1 "${transcripts[0]}" | grep -q '"status":"completed"' || fail "$what: the transcript's end is not completed"
  git diff --quiet -- fixtures/demo 2>/dev/null || fail "$what: the quick start changed fixtures/demo"
  say "ok: $what ran the quick start (\`rounds ${args[*]}\`) and exited 0"
}

# One target's archive and wheel, as people install them. The glibc wheel goes into a fresh
# virtualenv with pip; pip will not install a musllinux wheel on a glibc machine, so that one's
# binary is compared with its archive's, which runs here (it is static).
check_target() {
  local dir=$1 target=$2 v=$3
  local tarball unpacked pattern wheels contents
  tarball=$dir/$(asset_name "$target")
  mkdir "$work/$target"
  tar -xzf "$tarball" -C "$work/$target"
  unpacked=$work/$target/rounds-$v-$target
  [ "$(ls "$work/$target")" = "rounds-$v-$target" ] || fail "the archive's top directory: $(ls "$work/$target")"
  [ "$("$unpacked/rounds" --version)" = "rounds $v" ] || fail "the archive's rounds: $("$unpacked/rounds" --version)"
  quick_start "$unpacked/rounds" "$work/$target-run" "the archive $(basename "$tarball")"

  pattern=$(wheel_glob "$target")
  # shellcheck disable=SC2206 # the pattern is a glob, meant to expand
  wheels=("$dir"/$pattern)
  if [ "${#wheels[@]}" != 1 ]; then fail "expected one wheel for $target, got: ${wheels[*]}"; fi
  contents=$(python3 -m zipfile -l "${wheels[0]}" | awk 'NR > 1 { print $1 }')
  if grep -v '^rounds-[^/]*\.dist-info/' <<<"$contents" | grep -vqx 'rounds-[^/]*\.data/scripts/rounds'; then
    fail "the wheel holds more than the binary: $contents"
  fi
  if [ "$target" != "$(host)" ]; then
    python3 -m zipfile -e "${wheels[0]}" "$work/$target-wheel"
    cmp -s "$work/$target-wheel"/rounds-*.data/scripts/rounds "$unpacked/rounds" \
      || fail "the wheel's binary is not the archive's ($target)"
    say "ok: the wheel $(basename "${wheels[0]}") holds the archive's binary"
    return
  fi
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-index "${wheels[0]}"
  cmp -s "$work/venv/bin/rounds" "$unpacked/rounds" || fail "the wheel's binary is not the archive's"
  quick_start "$work/venv/bin/rounds" "$work/wheel-run" "the wheel $(basename "${wheels[0]}")"
}

check() {
  local dir=${1:-dist} v arch target
  dir=$(cd "$dir" && pwd)
  v=$(version)
  arch=$(uname -m)
  # Global: the EXIT trap runs after this function's locals are gone.
  work=$(mktemp -d "${TMPDIR:-/tmp}/rounds-check.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  shopt -s nullglob
  [ -f "$dir/SHA256SUMS" ] || fail "no $dir/SHA256SUMS (scripts/dist.sh sums)"
  (cd "$dir" && sha256sum --quiet -c SHA256SUMS) || fail "$dir/SHA256SUMS does not match its files"
  local files=("$dir"/rounds-*.tar.gz "$dir"/rounds-*.whl) listed
  listed=$(wc -l <"$dir/SHA256SUMS")
  [ "$listed" = "${#files[@]}" ] || fail "SHA256SUMS lists $listed files, $dir has ${#files[@]}"
  # This machine's own build must be there; the other C library's (same architecture) is
  # checked when it is.
  [ -f "$dir/$(asset_name "$(host)")" ] || fail "no $dir/$(asset_name "$(host)")"
  for target in "$arch-unknown-linux-gnu" "$arch-unknown-linux-musl"; do
    if [ -f "$dir/$(asset_name "$target")" ]; then check_target "$dir" "$target" "$v"; fi
  done
}

check_version() {
  local tag=$1 repo=${2:-} v
  v=$(version)
  [ "$tag" = "v$v" ] || fail "the tag $tag is not v$v, the version in Cargo.toml"
  if [ -n "$repo" ] && [ "$repo" != "$(repository)" ]; then
    fail "Cargo.toml's repository is $(repository), not $repo: cargo-binstall would look for the assets there"
  fi
  say "tag $tag is Cargo.toml's version"
}

publish_github() {
  local tag=$1 dir=${2:-dist}
  check_version "$tag"
  shopt -s nullglob
  local assets=("$dir"/rounds-*.tar.gz "$dir"/rounds-*.whl "$dir/SHA256SUMS")
  # Draft first: a published release may be immutable, and the action treats a release without
  # SHA256SUMS as none, so users never see one half uploaded.
  gh release create "$tag" --draft --verify-tag --title "rounds $tag" --notes "rounds ${tag#v}"
  gh release upload "$tag" "${assets[@]}"
  gh release edit "$tag" --draft=false
}

# Trusted publishing: uv trades the job's OIDC token for a short-lived PyPI token (no secret in
# the repository). Re-running a half-failed publish skips the files PyPI already has.
publish_pypi() {
  local dir=${1:-dist}
  shopt -s nullglob
  local wheels=("$dir"/rounds-*.whl)
  [ "${#wheels[@]}" -gt 0 ] || fail "no wheels in $dir"
  python3 -m venv --clear "$tools_dir/publish"
  "$tools_dir/publish/bin/pip" install --quiet --disable-pip-version-check "$PUBLISHER"
  "$tools_dir/publish/bin/uv" publish --trusted-publishing always \
    --check-url https://pypi.org/simple/ "${wheels[@]}"
}

case ${1:-} in
  build) shift; build "$@" ;;
  sums) shift; sums "$@" ;;
  check) shift; check "$@" ;;
  check-version) [ $# -ge 2 ] || fail "usage: dist.sh check-version TAG [REPOSITORY_URL]"; shift; check_version "$@" ;;
  publish-github) [ $# -ge 2 ] || fail "usage: dist.sh publish-github TAG [DIR]"; shift; publish_github "$@" ;;
  publish-pypi) shift; publish_pypi "$@" ;;
  version) version ;;
  host) host ;;
  targets) printf '%s\n' "${TARGETS[@]}" ;;
  asset-name) [ $# = 2 ] || fail "usage: dist.sh asset-name TARGET"; known_target "$2"; asset_name "$2" ;;
  tools) tools; command -v maturin ;;
  *) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2 ;;
esac
