#!/usr/bin/env bash
# How the action (action.yml) installs rounds, in two parts around its cache step:
#
#   action-install.sh where    decides the mode and writes the cache's key and path to
#                              $GITHUB_OUTPUT: `release` only when the action's ref is its own
#                              version's tag, the runner is a Linux one a release is built for,
#                              and that release's SHA256SUMS lists an archive for it; otherwise
#                              it says why (a notice) and installs from source.
#   action-install.sh install  installs in that mode and puts rounds' directory on $GITHUB_PATH.
#
# A release archive is checked against SHA256SUMS before anything in it is extracted or run,
# also when it came from the cache (another workflow of the repository can write the cache). A
# mismatch fails the step; it never falls back to a build, which would hide the tampering.
# The SHA256SUMS is fetched on every run, never cached, for the same reason.
#
# Everything comes from the environment (action.yml's `env:`, never `${{ }}` here):
#   INSTALL        the `install` input: release, source, path, or a pip requirement
#   ACTION_PATH    the action's files (Cargo.toml, the source to build)
#   ACTION_REF     github.action_ref: the tag, branch or SHA after `@` in `uses:` (empty for
#                  `uses: ./`); ACTION_REPO github.action_repository
#   RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP, GITHUB_SERVER_URL, GITHUB_OUTPUT, GITHUB_PATH: the runner's
#   ROUNDS_RELEASE_URL  where the releases are instead of $GITHUB_SERVER_URL/$ACTION_REPO/
#                  releases/download (a mirror; the tests' loopback server)
# and for `install`, the outputs of `where` (DIR; MODE, release or source, and CACHE_PATH for
# those two; for a release ASSET_URL, ASSET_SHA256, RELEASE_VERSION) and CACHED (the cache
# step's cache-hit).
set -euo pipefail

# A workflow command: GitHub reads one line, and `%` starts an escape.
annotate() {
  local kind=$1 msg=$2
  msg=${msg//'%'/%25}
  msg=${msg//$'\r'/%0D}
  msg=${msg//$'\n'/%0A}
  echo "::$kind title=rounds::$msg"
}

fail() {
  annotate error "$1"
  exit 1
}

output() {
  echo "$1=$2" >> "$GITHUB_OUTPUT"
}

# The version of the action's own files: what a release of this ref must be.
workspace_version() {
  awk '/^\[/ { in_ws = ($0 == "[workspace.package]") }
       in_ws && /^version[[:space:]]*=/ {
         sub(/^version[[:space:]]*=[[:space:]]*"/, ""); sub(/".*/, ""); print; exit
       }' "$ACTION_PATH/Cargo.toml"
}

# curl as rustup's installer calls it: HTTPS only (redirects too: GitHub's go to its object
# store), TLS 1.2 at least. Plain HTTP only to this machine (a test's server, a local mirror):
# anywhere else, anyone on the path could swap SHA256SUMS and the archive together. Sets
# `proto` for fetch; called in this shell, not in fetch's `$( )`, so that a refusal ends the step.
allow() {
  if [[ $1 =~ ^http://(127\.0\.0\.1|localhost)(:[0-9]+)?(/|$) ]]; then
    proto=(--proto '=http,https')
  elif [[ $1 == https://* ]]; then
    proto=(--proto '=https' --proto-redir '=https')
  else
    fail "refusing to download from $1: only https://, or http:// to 127.0.0.1 or localhost"
  fi
}

# Prints the HTTP status (000: no response at all).
fetch() {
  curl "${proto[@]}" --tlsv1.2 -fsSL --retry 3 -o "$2" -w '%{http_code}' "$1"
}

where_source() {
  # The cache key: the action's files (hashFiles sees only the workspace).
  local sum
  sum=$(cd "$ACTION_PATH" && find . \( -name .git -o -name target \) -prune -o -type f -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-20)
  output mode source
  output key "rounds-$RUNNER_OS-$RUNNER_ARCH-$sum"
  output cache-path "$DIR"
}

# Why a release is not used, then the build from source with its own cache.
instead() {
  annotate notice "$1; installing from source instead (cargo install)"
  where_source
}

where_release() {
  local version ref=${ACTION_REF:-} arch libc target name base sums code expected proto
  version=$(workspace_version)
  if [ -z "$ref" ]; then
    instead "no release for a local action (uses: ./)"
    return
  fi
  if [[ ! $ref =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || [ "$ref" != "v$version" ]; then
    instead "the action's ref $ref is not the tag of its version (v$version)"
    return
  fi
  case $RUNNER_OS/$RUNNER_ARCH in
    Linux/X64) arch=x86_64 ;;
    Linux/ARM64) arch=aarch64 ;;
    *)
      instead "no release is built for $RUNNER_OS/$RUNNER_ARCH runners"
      return
      ;;
  esac
  # Alpine's ldd is musl's; the glibc builds would not run there. `|| true`: musl's ldd exits
  # 1 for --version, and an image may have no ldd at all (then it is not Alpine's).
  case $(ldd --version 2>&1 || true) in
    *musl*) libc=musl ;;
    *) libc=gnu ;;
  esac
  target=$arch-unknown-linux-$libc
  name=rounds-$version-$target.tar.gz

  if [ -z "${ROUNDS_RELEASE_URL:-}" ] && [ -z "${ACTION_REPO:-}" ]; then
    instead "the action's repository is unknown (github.action_repository is empty)"
    return
  fi
  base=${ROUNDS_RELEASE_URL:-${GITHUB_SERVER_URL:-https://github.com}/$ACTION_REPO/releases/download}
  base=${base%/}
  allow "$base/"
  command -v curl >/dev/null || fail "curl is needed to download the release; install it, or set install: source"
  sums=$(mktemp "$RUNNER_TEMP/rounds-SHA256SUMS.XXXXXX")
  code=$(fetch "$base/$ref/SHA256SUMS" "$sums") || true
  if [ "$code" = 404 ]; then
    instead "$base/$ref has no SHA256SUMS (no release for $ref, or a draft)"
    return
  fi
  # Anything else (a network error, a 5xx after the retries) may pass on a rerun; a build from
  # source instead would hide it and take minutes.
  [ "$code" = 200 ] || fail "could not fetch $base/$ref/SHA256SUMS (HTTP ${code:-000}, 000: no response); failing rather than guessing"
  # The exact name (sha256sum writes `*NAME` for binary mode): a grep would also match
  # NAME.sig or a longer target's name.
  expected=$(awk -v f="$name" '$2 == f || $2 == "*" f { print $1; exit }' "$sums")
  rm -f "$sums"
  if [ -z "$expected" ]; then
    instead "the $ref release has no $name"
    return
  fi
  [[ $expected =~ ^[0-9a-f]{64}$ ]] || fail "SHA256SUMS of $ref has a malformed line for $name"
  output mode release
  output version "$version"
  output url "$base/$ref/$name"
  output sha256 "$expected"
  output key "rounds-release-$version-$RUNNER_OS-$RUNNER_ARCH-$libc"
  output cache-path "$DIR/download"
}

where() {
  DIR=$RUNNER_TEMP/rounds-install
  output dir "$DIR"
  case $INSTALL in
    release) where_release ;;
    source) where_source ;;
  esac
}

install_release() {
  local name=${ASSET_URL##*/} tarball actual from=cache fresh exe said proto
  tarball=$CACHE_PATH/$name
  if [ ! -f "$tarball" ]; then
    from=download
    mkdir -p "$CACHE_PATH"
    allow "$ASSET_URL"
    fetch "$ASSET_URL" "$tarball.part" >/dev/null || fail "could not download $ASSET_URL"
    mv "$tarball.part" "$tarball"
  fi
  actual=$(sha256sum "$tarball" | cut -d' ' -f1)
  if [ "$actual" != "$ASSET_SHA256" ]; then
    fail "checksum mismatch for $name ($from): expected $ASSET_SHA256 (SHA256SUMS), got $actual; nothing from it was extracted or run"
  fi
  mkdir -p "$DIR"
  fresh=$(mktemp -d "$DIR/release.XXXXXX")
  tar -xzf "$tarball" -C "$fresh"
  exe=$fresh/${name%.tar.gz}/rounds
  [ -x "$exe" ] || fail "$name has no ${name%.tar.gz}/rounds"
  said=$("$exe" --version) || fail "$name's rounds does not run here: $said"
  [ "${said%%$'\n'*}" = "rounds $RELEASE_VERSION" ] || fail "$name's rounds says '$said', not 'rounds $RELEASE_VERSION'"
  mkdir -p "$DIR/bin"
  ln -sfn "$exe" "$DIR/bin/rounds"
  echo "$DIR/bin" >> "$GITHUB_PATH"
}

install() {
  case $INSTALL in
    path)
      command -v rounds >/dev/null || fail "install: path, but no rounds on PATH"
      ;;
    release | source)
      if [ "${MODE:-}" = release ]; then
        install_release
        return
      fi
      if [ "${CACHED:-}" != true ]; then
        cargo install --locked --path "$ACTION_PATH" --root "$DIR"
      fi
      echo "$DIR/bin" >> "$GITHUB_PATH"
      ;;
    *)
      # A virtualenv of its own, so only rounds (not its python or pip) joins PATH.
      python3 -m venv "$DIR/venv"
      "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "$INSTALL"
      mkdir -p "$DIR/bin"
      ln -sf "$DIR/venv/bin/rounds" "$DIR/bin/rounds"
      echo "$DIR/bin" >> "$GITHUB_PATH"
      ;;
  esac
}

case ${1:-} in
  where) where ;;
  install) install ;;
  *)
    echo "usage: $0 where|install" >&2
    exit 2
    ;;
esac
