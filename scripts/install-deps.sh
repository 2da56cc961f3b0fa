#!/usr/bin/env bash
# Installs what Hearth needs to build and test on Debian 12 from Debian's own packages.
# Idempotent: installs only what is missing. Uses sudo when not root.
set -euo pipefail

# libstb-dev and libwebp-dev: image decoding (vision requests). libpoppler-cpp-dev: PDF text in chats.
# python3-numpy and python3-yaml: llama.cpp's gguf-py (the reference's writer) makes test files with them.
packages=(
  build-essential cmake ninja-build ccache pkg-config git file
  qt6-base-dev qt6-base-dev-tools libqt6sql6-sqlite libgl-dev
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools
  libcpp-httplib-dev libspdlog-dev libsqlite3-dev nlohmann-json3-dev libstb-dev libwebp-dev libpoppler-cpp-dev
  clang libclang-rt-14-dev
  xvfb xauth python3 python3-numpy python3-yaml curl desktop-file-utils
)
# Node.js and npm run the reference engine in tests; any install that provides the commands will do
# (a nodejs from another source may already bundle npm, and Debian's npm would conflict with it).
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present" >&2
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
