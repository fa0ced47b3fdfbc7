#!/usr/bin/env bash
# Installs what a fresh Debian machine with the CUDA toolkit lacks, then configures and builds
# tilepick into build/ (override with BUILD_DIR). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(cmake g++ make pkg-config nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev
              libbenchmark-dev zlib1g-dev python3 python3-pip python3-venv)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The CUDA toolkit (NVRTC, driver API headers) is a prerequisite, not installed here.
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$CUDA_HOME/include/nvrtc.h" ]; then
  echo "setup: error: no CUDA toolkit at $CUDA_HOME (set CUDA_HOME); tilepick needs NVRTC and cuda.h" >&2
  exit 1
fi
export PATH="$CUDA_HOME/bin:$PATH"

# The Python side lives in a virtual environment (VENV, default .venv; stock Debian and Ubuntu refuse
# a system-wide pip install). It sees the interpreter's own packages (a preinstalled torch, say) and
# gets requirements.txt; its python builds tilepick._core and runs the Python tests.
VENV="${VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv --system-site-packages "$VENV"
PYTHON="$(cd "$VENV/bin" && pwd)/python"
"$PYTHON" -m pip install -q -r requirements.txt
# WITH_TORCH=1 adds the package's [torch] extra as pyproject.toml states it (about 5 GB with torch's CUDA
# libraries): then the Python tests also run tilepick.torch's CPU-side tests (fake kernels, opcheck, autograd).
if [ "${WITH_TORCH:-0}" = "1" ]; then
  "$PYTHON" -m pip install -q $("$PYTHON" -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["torch"])')
fi

BUILD_DIR="${BUILD_DIR:-build}"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DCUDAToolkit_ROOT="$CUDA_HOME" \
  -DPython_EXECUTABLE="$PYTHON" -DPython3_EXECUTABLE="$PYTHON" -DTILEPICK_TSAN_TESTS="${TILEPICK_TSAN_TESTS:-ON}" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
# The dispatcher's concurrency tests also run under ThreadSanitizer (ctest dispatch_tsan): a second
# build of the tests in $BUILD_DIR/tsan. TILEPICK_TSAN_TESTS=OFF skips it.
if [ "${TILEPICK_TSAN_TESTS:-ON}" = "ON" ]; then
  cmake -S . -B "$BUILD_DIR/tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT="$CUDA_HOME" -DTILEPICK_TSAN=ON \
    -DTILEPICK_PYTHON=OFF >/dev/null
  cmake --build "$BUILD_DIR/tsan" -j "$(nproc)" --target tilepick_tests
fi
echo "setup: built $BUILD_DIR/tilepick"
