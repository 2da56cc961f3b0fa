#!/usr/bin/env bash
# Installs what is missing, builds Hearth (release) and launches the desktop app.
# Any arguments are passed to the app (e.g. a model file to open).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
cmake --preset release >/dev/null
# Only the desktop app and what it links: the CLI, server and tests are not needed to open a window.
cmake --build --preset release --target hearth
exec "$root/build/release/bin/hearth" "$@"
