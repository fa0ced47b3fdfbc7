#!/usr/bin/env bash
# How far can any kernel beat cuDNN on the grouped and depthwise layers of issue 36? One device call (carry .deps
# .commit) measures the three ceilings of bound.py on one machine: the copy rate (bench/copy_bandwidth.cu), the
# shortest time any kernel takes in the sweep's timing (trivial problems, ours and cuDNN's), and every layer of
# data/problems/conv_grouped_dw.txt with its 3 best configs of bench/results/2026-11-29-grouped-dw (v1, v7) beside
# cuDNN's rows (pairs.txt):
#   BUDGET_S=330 bash experiments/2026-12-06-dw-bounds/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-06-dw-bounds
source bench/gpu_session.sh
build_cli
copy_rate
timed_sweep layers $(( $(left) - 15 )) --pairs "$HERE/pairs.txt"
