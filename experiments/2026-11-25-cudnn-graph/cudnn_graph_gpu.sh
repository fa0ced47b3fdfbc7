#!/usr/bin/env bash
# cuDNN's graph-API run path (TILEPICK_CUDNN_GRAPH, src/run/vendor_cudnn_graph.cpp) on the device tool:
#   1. the conv layers of bench/torch_e2e.py's networks (bench/sweep/vendor_e2e_nets.txt.gz) swept with the
#      cuDNN baseline, graph on (every output checked; its 'heur' records are the graph's first engine);
#      SWEEP_OFF=1: the same with TILEPICK_CUDNN_GRAPH=off (the legacy first choice) for the comparison;
#   2. PROFILE=1: bench/torch_profile.py (resnet50, convnext_t; torch, auto, off).
# Results: $OUT/results.tgz. Host time per Plan::run with the graph path on and off: experiments/2026-11-25-host-cost/host_cost_gpu.sh.
#   BUDGET_S=560 [SWEEP_S=200] [SWEEP_OFF=0] [PROFILE=1] bash experiments/2026-11-25-cudnn-graph/cudnn_graph_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_all
sweep_list() {  # NAME GRAPH SECONDS
  [ "$3" -gt 40 ] || { echo "$1: skipped"; return; }
  TILEPICK_CUDNN_GRAPH=$2 timeout "$3" $T sweep --pairs bench/sweep/vendor_e2e_nets.txt.gz --min-timed-ms 5 --max-reps 50 \
    --gpus all -q --time-limit $(( $3 - 20 )) -o "$W/$1.csv.gz" >"$W/$1.log" 2>&1
  echo "$1 rc=$? after $(( $(date +%s) - START )) s: $(tail -1 "$W/$1.log")"
}
sweep_list e2e_nets_graph on $(( ${SWEEP_S:-200} < $(left) - 10 ? ${SWEEP_S:-200} : $(left) - 10 ))
[ "${SWEEP_OFF:-0}" = 1 ] && sweep_list e2e_nets_legacy off $(( ${SWEEP_S:-200} < $(left) - 10 ? ${SWEEP_S:-200} : $(left) - 10 ))
if [ "${PROFILE:-1}" = 1 ] && [ $(left) -gt 100 ]; then
  timeout $(( $(left) - 10 )) python3 bench/torch_profile.py --out "$W/profile" --models resnet50,convnext_t \
    --modes torch,auto,off > "$W/profile.log" 2>&1
  echo "profile rc=$?"; sed -n '/^| model/,/^$/p' "$W/profile/profile.md" 2>/dev/null || tail -20 "$W/profile.log"
fi
echo "after $(( $(date +%s) - START )) s"
