#!/usr/bin/env bash
# ctest wheel_package: builds the wheel (`pip wheel .`, no build isolation: scikit-build-core and
# nanobind come from requirements.txt), checks that it carries the models, data, CLI and extension,
# installs it into a fresh virtual environment and, from another directory, checks __version__ and
# that `tilepick select` uses the shipped model (not the analytic fallback).
#   wheel_check.sh PYTHON SOURCE_DIR WORK_DIR
set -euo pipefail
PYTHON=$1 SRC=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK/wheel" "$WORK/elsewhere"
"$PYTHON" -m pip wheel "$SRC" --no-build-isolation --no-deps -q -w "$WORK/wheel" \
  --config-settings=build-dir="$WORK/build" >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
WHEEL=$(ls "$WORK"/wheel/tilepick-*.whl)
"$PYTHON" - "$WHEEL" "$SRC" <<'PY'
import sys, zipfile, pathlib
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
src = pathlib.Path(sys.argv[2])
want = [f"tilepick/{p.relative_to(src).as_posix()}" for p in (src / "models").rglob("*") if p.is_file()]
want += ["tilepick/bin/tilepick", "tilepick/data/spaces/gemm_sm90.json", "tilepick/data/arch/h200.json",
         "tilepick/__init__.py", "tilepick/cli.py", "tilepick/info.py"]
missing = [w for w in want if w not in names]
assert not missing, f"the wheel lacks {missing[:5]} ({len(missing)} files)"
assert any(n.startswith("tilepick/_core") for n in names), "the wheel lacks tilepick._core"
assert any(n.endswith("LICENSE") for n in names), "the wheel lacks the license"
print(f"wheel_check: {len(names)} files, {sum(n.startswith('tilepick/models/') for n in names)} model files")
PY
# A fresh environment that sees the interpreter's packages (numpy) but not the source tree.
"$PYTHON" -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --no-deps "$WHEEL"
cd "$WORK/elsewhere"
env -u PYTHONPATH -u TILEPICK_DATA_DIR -u TILEPICK_MODELS_DIR "$WORK/venv/bin/python" -c \
  'import tilepick; print("version", tilepick.__version__); assert tilepick.__version__.count(".") == 2'
out=$(env -u TILEPICK_DATA_DIR -u TILEPICK_MODELS_DIR "$WORK/venv/bin/tilepick" select -p 'gemm rcr m4096 n4096 k4096 bf16' -k 1 --explain)
echo "$out" | head -3
echo "$out" | grep -q "model:gemm_half_h200" || { echo "wheel_check: the installed command did not use the shipped model"; exit 1; }
env -u PYTHONPATH -u TILEPICK_DATA_DIR -u TILEPICK_MODELS_DIR "$WORK/venv/bin/python" -m tilepick.info | tee "$WORK/info.txt"
grep -q "gemm_half_h200: usable" "$WORK/info.txt"
echo "wheel_check: ok"
