#!/usr/bin/env bash
# Lints the GitHub workflow files and the action as GitHub reads them, with tools from PyPI
# (actionlint has no build this machine's registries offer): check-jsonschema against
# SchemaStore's schemas for workflows and actions (vendored in the package: no download), and
# zizmor's security audit (template injection, unpinned actions, excessive permissions,
# credentials left in checkouts), offline. Part of .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=target/lint-tools
pins=(check-jsonschema==0.39.0 zizmor==1.32.0)
if [ ! -x "$tools/bin/zizmor" ] || ! "$tools/bin/pip" freeze 2>/dev/null | grep -qx "${pins[1]}"; then
  python3 -m venv --clear "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check "${pins[@]}"
fi
workflows=(.github/workflows/*.yml examples/github-actions*.yml)
"$tools/bin/check-jsonschema" --builtin-schema vendor.github-workflows "${workflows[@]}"
"$tools/bin/check-jsonschema" --builtin-schema vendor.github-actions action.yml
"$tools/bin/zizmor" --offline --no-progress action.yml "${workflows[@]}"
