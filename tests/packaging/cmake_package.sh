#!/usr/bin/env bash
# ctest cmake_package: `cmake --install` of the build into a fresh prefix, a consumer project built
# with find_package(tilepick) (the static C++ library and the shared C API), installed beside it and
# run from another directory without TILEPICK_* variables: it must find the installed data and models.
#   cmake_package.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
BUILD=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK/elsewhere"
cmake --install "$BUILD" --prefix "$WORK/prefix" >"$WORK/install.log"
ls "$WORK/prefix/lib/"libtilepick_c.so.* >/dev/null
cmake -S "$SRC/tests/packaging/consumer" -B "$WORK/consumer" -DCMAKE_PREFIX_PATH="$WORK/prefix" \
  -DCMAKE_INSTALL_PREFIX="$WORK/prefix" -DTILEPICK_C_EXAMPLE="$SRC/examples/c/plan_gemm.c" >"$WORK/configure.log"
cmake --build "$WORK/consumer" -j 2 >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; exit 1; }
cmake --install "$WORK/consumer" >/dev/null
cd "$WORK/elsewhere"
out=$(env -u TILEPICK_DATA_DIR -u TILEPICK_MODELS_DIR "$WORK/prefix/bin/consumer_cpp")
echo "$out"
echo "$out" | grep -qx "data $WORK/prefix/share/tilepick/data" || { echo "cmake_package: not the installed data"; exit 1; }
echo "$out" | grep -qx "models $WORK/prefix/share/tilepick/models" || { echo "cmake_package: not the installed models"; exit 1; }
echo "$out" | grep -q "by model:gemm_half_h200" || { echo "cmake_package: the shipped model was not used"; exit 1; }
env -u TILEPICK_DATA_DIR -u TILEPICK_MODELS_DIR "$WORK/prefix/bin/consumer_c" | tee "$WORK/c.txt"
grep -q "offline plan (h200): fam=" "$WORK/c.txt"
echo "cmake_package: ok"
