#!/usr/bin/env bash
# Retakes the README's screenshots (docs/screenshots) with the GUI tests under Xvfb.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build/h}"
export HEARTH_TEST_DATA="${HEARTH_TEST_DATA:-$(cd .. && pwd)/shared}"
export HEARTH_SCREENSHOT_DIR="$PWD/docs/screenshots"
mkdir -p "$HEARTH_SCREENSHOT_DIR"
for t in test_app_window test_first_run test_chat_images test_mcp_dialog test_chat_mcp_tools test_chat_documents \
         test_chat_document_folders test_chat_transcript; do
  xvfb-run -a -s "-screen 0 1400x900x24" "$build/bin/tests_gui" "$t" >/dev/null
done
ls -l "$HEARTH_SCREENSHOT_DIR"
