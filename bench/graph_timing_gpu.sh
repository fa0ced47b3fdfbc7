#!/usr/bin/env bash
# One GPU session comparing the two timing methods of short kernels (docs/sweep.md "Timing"): the
# same pairs (bench/sweep/graph_timing.txt.gz: 173 held-out problems, mostly under 20 us, their
# recorded fastest configs and the shipped models' first 4; bench/recheck_pairs.py --problems
# bench/sweep/graph_timing_problems.txt) swept twice each with one launch per timed region
# (--graph-mb 0) and with CUDA graphs of launches over operand copies (the default).
#   BUDGET_S=560 bash bench/graph_timing_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
build_cli
pairs=bench/sweep/graph_timing.txt.gz
timed_sweep graph_on $(( ($(left) - 10) / 2 )) --pairs $pairs --repeat 2
timed_sweep graph_off $(( $(left) - 10 )) --pairs $pairs --repeat 2 --graph-mb 0
