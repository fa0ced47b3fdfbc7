# Sourced by the one-call GPU scripts (bench/*_gpu.sh): a time budget and a work folder that is
# tarred into $OUT/results.tgz on exit (the device tool returns at most 8 files).
#   START, left (seconds of BUDGET_S left, default 560), W (the work folder), build_all, build_cli, copy_rate,
#   verify_into, timed_sweep, setup_training
START=$(date +%s)
left() { echo $(( ${BUDGET_S:-560} - ($(date +%s) - START) )); }
# $OUT should start empty, but lent machines have held other calls' files there: W starts empty regardless.
W="$OUT/w"; rm -rf "$W"; mkdir -p "$W"
# The tree's commit: the .commit stamp of scripts/device_aside.sh (the copied tree's git can be older), else git's.
{ [ -f .commit ] && echo "commit $(cat .commit)" || git log -1 --format='commit %H'; } > "$W/commit.txt" 2>/dev/null
finish() { tar czf "$OUT/results.tgz" -C "$W" . ; rm -rf "$W"; }
trap finish EXIT
# Builds the CLI, the Python module, the C library and the examples; exports the JIT cache and PYTHONPATH, sets T
# (the CLI's path) and records the GPUs' clocks.
build_all() {
  DEVICE_BUILD_ALL=1 ./scripts/device_build.sh >"$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
  echo "built after $(( $(date +%s) - START )) s"
  export TILEPICK_CACHE_DIR=/tmp/tp-jit PYTHONPATH="$PWD/python"
  T=build-device/tilepick
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$W/nvidia-smi.csv"
}
# Builds the CLI only, sets T (its path) and the JIT cache, records the GPUs' clocks (the sweep scripts).
build_cli() {
  ./scripts/device_build.sh >"$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
  echo "built after $(( $(date +%s) - START )) s"
  T=build-device/tilepick
  export TILEPICK_CACHE_DIR=/tmp/tp-jit
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$W/nvidia-smi.csv"
}
# The device copy rate, read + write (bench/copy_bandwidth.cu built with nvcc), into $W/copy_bandwidth.txt; prints
# it and sets COPY_GBS.
copy_rate() {
  nvcc -O2 -o /tmp/copy_bandwidth bench/copy_bandwidth.cu && /tmp/copy_bandwidth > "$W/copy_bandwidth.txt" 2>&1
  cat "$W/copy_bandwidth.txt"; COPY_GBS=$(awk '/^copy_gbs/ {print $2}' "$W/copy_bandwidth.txt")
}
# verify_into NAME VERIFY_ARGS...: `tilepick verify` (at most 150 s) into $W/NAME.txt; prints its last line and the failures.
verify_into() {
  local name=$1; shift
  timeout 150 $T verify "$@" >"$W/$name.txt" 2>&1
  echo "$name rc=$?: $(tail -1 "$W/$name.txt")"; grep -A2 '^FAIL' "$W/$name.txt" | head -6
}
# timed_sweep NAME SECONDS SWEEP_ARGS...: compile + measure within SECONDS (measuring stops 20 s early; the
# compile phase does not count for --time-limit), records in $W/NAME.csv.gz, log in $W/NAME.log.
# Timing as in data/sweeps/README.md.
timed_sweep() {
  local name=$1 s=$2; shift 2
  [ "$s" -gt 40 ] || { echo "$name: skipped (${s} s left)"; return; }
  timeout "$s" $T sweep "$@" --min-timed-ms 5 --max-reps 50 --gpus all -q --time-limit $(( s - 20 )) \
    -o "$W/$name.csv.gz" >"$W/$name.log" 2>&1
  echo "$name rc=$? after $(( $(date +%s) - START )) s: $(tail -1 "$W/$name.log")"
}
# plan_chunks DIR PLAN_ARGS...: `$T plan --json` over the problem file $PLAN_PROBLEMS, 8 problems per process (a chunk's JSON is
# written when all its plans are made), into DIR/chunk_??.json; stops while FLOOR (default 30) seconds are left.
plan_chunks() {
  local dir=$1 f; shift
  mkdir -p "$dir" && grep -v '^#' "${PLAN_PROBLEMS:?plan_chunks: set PLAN_PROBLEMS}" | split -l 8 - "$dir/chunk_"
  for f in "$dir"/chunk_??; do
    [ $(left) -gt ${FLOOR:-30} ] || { echo "$dir: stopped at $f"; break; }
    timeout $(( $(left) - ${FLOOR:-30} + 10 )) $T plan -f "$f" "$@" --json >"$f.json" 2>"$f.err" || tail -2 "$f.err"
    rm -f "$f"
  done
}
# Installs the carried LightGBM wheel (.whl), builds the Python module, and sets TRAIN / VAL: every
# data/sweeps/h200 training and held-out record file, and REMEASURED: the CUDA-graph re-measures of
# training problems (data/sweeps/h200-graph/conv_train_*; train --remeasured) (bench/train*_device.sh).
setup_training() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  build_all
  export PYTHONPATH="$PWD/python:/tmp/site"
  TRAIN=(data/sweeps/h200/*_train*.csv.gz)
  VAL=(data/sweeps/h200/*_val*.csv.gz)
  REMEASURED=(data/sweeps/h200-graph/conv_train_*.csv.gz)
}
# manifest_files MODEL KEY [graph|plain]: the files a shipped manifest lists under KEY ("data", "validation_files"),
# only those under data/sweeps/h200-graph/ (graph) or only the others (plain)
manifest_files() {
  python3 - "$@" <<'PY'
import json, sys
m = json.load(open(f"models/{sys.argv[1]}/manifest.json"))
files = [d["file"] if isinstance(d, dict) else d for d in m[sys.argv[2]]]
pick = sys.argv[3] if len(sys.argv) > 3 else ""
print(" ".join(f for f in files if not pick or ("/h200-graph/" in f) == (pick == "graph")))
PY
}
# manifest_recipe MODEL: the shipped manifest's objective, bag and patience as tilepick.train options
manifest_recipe() {
  python3 - "$1" <<'PY'
import json, sys
m = json.load(open(f"models/{sys.argv[1]}/manifest.json"))
print(f"--objectives {m['objective']} --bag {m['bag']}" + (f" --patience {m['patience']}" if m.get("patience") else ""))
PY
}
