#!/usr/bin/env bash
# Installs the official `openai` npm package for the end-to-end server test into
# ${HEARTH_NPM_DIR:-$HOME/.cache/hearth-npm}. Idempotent, and offline-tolerant: when npm or the
# registry is unavailable it says so and exits 0 (the test then skips).
set -u

dir="${HEARTH_NPM_DIR:-$HOME/.cache/hearth-npm}"
version="${HEARTH_OPENAI_NPM_VERSION:-^4}"

if [ -f "$dir/node_modules/openai/package.json" ]; then
  installed=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$dir/node_modules/openai/package.json" | head -n1)
  echo "openai ${installed:-?} is already installed in $dir"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is not installed; skipping the openai package (the e2e test will skip)"
  exit 0
fi
mkdir -p "$dir" || { echo "cannot create $dir; skipping"; exit 0; }
if [ ! -f "$dir/package.json" ]; then
  printf '{\n  "name": "hearth-npm-cache",\n  "private": true\n}\n' > "$dir/package.json"
fi
if npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "openai@${version}"; then
  echo "installed openai into $dir"
else
  echo "npm could not install openai (offline or registry unavailable); the e2e test will skip"
fi
exit 0
