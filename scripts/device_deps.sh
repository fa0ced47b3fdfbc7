#!/usr/bin/env bash
# Copies the header-only build dependencies (nlohmann-json, CLI11) into .deps/ so that the lent GPU
# machine, which has the CUDA toolkit and CMake but no Debian packages, can build tilepick.
# .deps/ is git-ignored; name it in the device tool's `carry`.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/include .deps/share/cmake
cp -r /usr/include/nlohmann /usr/include/CLI .deps/include/
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 .deps/share/cmake/
# zlib: headers from here; the library is the GPU machine's own libz.so.1, linked by its soname.
cp /usr/include/zlib.h /usr/include/zconf.h .deps/include/ 2>/dev/null || cp /usr/include/x86_64-linux-gnu/zconf.h .deps/include/
mkdir -p .deps/lib && ln -sf /usr/lib/x86_64-linux-gnu/libz.so.1 .deps/lib/libz.so
# cuDNN headers (types and enums only; libcudnn.so.9 is dlopen'ed there, from torch's wheel): in a
# subfolder so that they never shadow a toolkit's own cudnn.h (CMake looks there last).
if ls /usr/local/cuda/include/cudnn*.h >/dev/null 2>&1; then
  mkdir -p .deps/include/cudnn9 && cp /usr/local/cuda/include/cudnn*.h .deps/include/cudnn9/
fi
echo "device_deps: .deps ready ($(du -sh .deps | cut -f1))"
