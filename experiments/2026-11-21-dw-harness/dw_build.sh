#!/usr/bin/env bash
# Builds the standalone depthwise harness (experiments/2026-11-21-dw-harness/dw_bench.cpp) into build-dwdev/dw_bench:
# tilepick core + src/jit/family_dw.cpp, NVRTC and the driver API. Needs nlohmann-json headers
# (system, or .deps/include from scripts/device_deps.sh). Usage: experiments/2026-11-21-dw-harness/dw_build.sh [jobs]
set -euo pipefail
cd "$(dirname "$0")/../.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
OUT=build-dwdev
OBJ=build-dwdev-obj  # objects apart, so that carrying build-dwdev stays small
mkdir -p $OBJ $OUT/cubins
FLAGS="-std=c++20 -O2 -Iinclude -Isrc -I$CUDA/include -I.deps/include -DTILEPICK_SOURCE_DATA_DIR=\"data\" -DTILEPICK_VERSION=\"dev\""
SRCS="$(ls src/core/*.cpp) src/jit/family_dw.cpp experiments/2026-11-21-dw-harness/dw_bench.cpp"
pids=()
for s in $SRCS; do
  o=$OBJ/$(echo $s | tr / _).o
  if [ ! -f $o ] || [ $s -nt $o ] || [ -n "$(find include kernels/conv/dw_params.cuh -newer $o | head -1)" ]; then
    g++ $FLAGS -c $s -o $o &
    pids+=($!)
    if [ ${#pids[@]} -ge ${1:-2} ]; then wait ${pids[0]}; pids=("${pids[@]:1}"); fi
  fi
done
for p in "${pids[@]}"; do wait $p; done
g++ -o $OUT/dw_bench $OBJ/*.o -L$CUDA/lib64 -L$CUDA/lib64/stubs -lnvrtc -lcuda -lpthread -ldl \
  -static-libstdc++ -static-libgcc -Wl,-rpath,$CUDA/lib64
echo "built $OUT/dw_bench"
