#!/usr/bin/env bash
# Builds the tilepick CLI on the lent GPU machine (run scripts/device_deps.sh here first and carry
# .deps). No tests: GoogleTest is not installed there.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-device -DCMAKE_BUILD_TYPE=Release -DTILEPICK_BUILD_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$PWD/.deps" >/dev/null
cmake --build build-device -j "$(nproc)" --target tilepick_cli
# DEVICE_BUILD_ALL=1: also the Python module (python/tilepick/_core*.so), libtilepick_c.so and the C/C++ examples.
if [ -n "${DEVICE_BUILD_ALL:-}" ]; then cmake --build build-device -j "$(nproc)" --target _core tilepick_c example_plan_gemm example_dispatch_ops; fi
echo "device_build: build-device/tilepick"
