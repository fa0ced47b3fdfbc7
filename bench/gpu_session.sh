# Sourced by the one-call GPU scripts (bench/*_gpu.sh): a time budget and a work folder that is
# tarred into $OUT/results.tgz on exit (the device tool returns at most 8 files).
#   START, left (seconds of BUDGET_S left, default 560), W (the work folder), build_all
START=$(date +%s)
left() { echo $(( ${BUDGET_S:-560} - ($(date +%s) - START) )); }
W="$OUT/w"; mkdir -p "$W"
finish() { tar czf "$OUT/results.tgz" -C "$W" . ; rm -rf "$W"; }
trap finish EXIT
# Builds the CLI, the Python module, the C library and the examples; exports the JIT cache and PYTHONPATH.
build_all() {
  DEVICE_BUILD_ALL=1 ./scripts/device_build.sh >"$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
  echo "built after $(( $(date +%s) - START )) s"
  export TILEPICK_CACHE_DIR=/tmp/tp-jit PYTHONPATH="$PWD/python"
}
