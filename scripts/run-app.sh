#!/usr/bin/env bash
# Installs what is missing, builds Hearth (release) and launches the desktop app.
# Any arguments are passed to the app (e.g. a model file to open).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
exec "$root/build/release/bin/hearth" "$@"
