#!/usr/bin/env bash
# Builds the tilepick CLI on the lent GPU machine (run scripts/device_deps.sh here first and carry
# .deps). No tests: GoogleTest is not installed there.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DTILEPICK_BUILD_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$PWD/.deps" >/dev/null
cmake --build build-device -j "$(nproc)" --target tilepick_cli
echo "device_build: build-device/tilepick"
