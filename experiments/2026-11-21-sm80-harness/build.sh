#!/usr/bin/env bash
# Builds experiments/2026-11-21-sm80-harness/sm80_check into build-sm80dev/ (git-ignored; carry it to the device):
# the harness plus the library sources it needs, compiled directly (no CMake).
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
OUT=build-sm80dev
mkdir -p "$OUT/obj"
INC="-Iinclude -Isrc -I$CUDA_HOME/include"
[ -d .deps/include ] && INC="$INC -I.deps/include"
SRCS="src/core/*.cpp src/ref/*.cpp src/jit/plan.cpp src/jit/codegen.cpp src/jit/family_*.cpp experiments/2026-11-21-sm80-harness/sm80_check.cpp"
objs=()
for f in $SRCS; do
  o="$OUT/obj/$(echo "$f" | tr / _).o"
  objs+=("$o")
  if [ ! -f "$o" ] || [ "$f" -nt "$o" ] || [ src/jit/codegen.hpp -nt "$o" ]; then
    echo "$f"
    g++ -std=c++20 -O2 -g0 $INC -DTILEPICK_SOURCE_DATA_DIR="\"$PWD/data\"" -DTILEPICK_VERSION="\"dev\"" -c "$f" -o "$o" &
    while [ "$(jobs -r | wc -l)" -ge "${JOBS:-2}" ]; do sleep 0.2; done
  fi
done
wait
g++ -o "$OUT/sm80_check" "${objs[@]}" -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/lib64/stubs" \
  -lnvrtc -lcublas -lcudart -lcuda -lpthread -ldl -Wl,-rpath,"$CUDA_HOME/lib64"
echo "built $OUT/sm80_check"
