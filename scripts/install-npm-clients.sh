#!/usr/bin/env bash
# Installs the official API clients the server's end-to-end tests drive (openai, ollama,
# @anthropic-ai/sdk), a JSON Schema validator (ajv, ajv-formats) and the reference MCP servers the
# app's MCP host is tested against (server-everything, server-filesystem) into
# ${HEARTH_NPM_DIR:-$HOME/.cache/hearth-npm}. Idempotent, and offline-tolerant: when npm or the
# registry is unavailable it says so and exits 0 (the tests that need a package then skip).
set -u

dir="${HEARTH_NPM_DIR:-$HOME/.cache/hearth-npm}"
packages=(
  "openai@${HEARTH_OPENAI_NPM_VERSION:-^4}"
  "ollama@^0.6"
  "@anthropic-ai/sdk@^1"
  "ajv@^8"
  "ajv-formats@^3"
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
)

missing=()
for spec in "${packages[@]}"; do
  name="${spec%@*}"
  if [ -f "$dir/node_modules/$name/package.json" ]; then
    installed=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$dir/node_modules/$name/package.json" | head -n1)
    echo "$name ${installed:-?} is already installed in $dir"
  else
    missing+=("$spec")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is not installed; skipping ${missing[*]} (the tests that need them will skip)"
  exit 0
fi
mkdir -p "$dir" || { echo "cannot create $dir; skipping"; exit 0; }
if [ ! -f "$dir/package.json" ]; then
  printf '{\n  "name": "hearth-npm-cache",\n  "private": true\n}\n' > "$dir/package.json"
fi
if npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "${missing[@]}"; then
  echo "installed ${missing[*]} into $dir"
else
  echo "npm could not install ${missing[*]} (offline or registry unavailable); the tests that need them will skip"
fi
exit 0
