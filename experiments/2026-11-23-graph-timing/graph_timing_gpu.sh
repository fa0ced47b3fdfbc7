#!/usr/bin/env bash
# One GPU session comparing the timing methods (docs/sweep.md "Timing"): the same pairs
# (bench/sweep/graph_timing.txt.gz: 173 held-out problems, mostly under 20 us, their recorded
# fastest configs and the shipped models' first 4; bench/recheck_pairs.py --problems
# bench/sweep/graph_timing_problems.txt) swept with CUDA graphs (the default) and with one launch
# issued per timed region (--graph-mb 0), REPEAT passes each (default 2); then, with `run`,
# `tilepick run` over experiments/2026-11-21-dispatch/problems.txt (its timing uses graphs too).
#   BUDGET_S=560 [REPEAT=1] bash experiments/2026-11-23-graph-timing/graph_timing_gpu.sh [run]
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
pairs=bench/sweep/graph_timing.txt.gz
budget=$(( ($(left) - 10 - ${#@} * 40) / 2 ))
timed_sweep graph_on $budget --pairs $pairs --repeat ${REPEAT:-2}
timed_sweep graph_off $budget --pairs $pairs --repeat ${REPEAT:-2} --graph-mb 0
[ "${1:-}" = run ] && SKIP_BUILD=1 OUT=$W/dispatch timeout 120 bash experiments/2026-11-21-dispatch/dispatch_gpu.sh run
