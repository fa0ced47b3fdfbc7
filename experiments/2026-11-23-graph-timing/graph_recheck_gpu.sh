#!/usr/bin/env bash
# The held-out eval re-measured with graph timing (docs/sweep.md "Timing"): per held-out problem of
# the README eval, its recorded fastest 8 (plus any within 5%, at most 16) and the shipped models'
# first 4 (bench/sweep/graph_recheck_val.txt.gz, bench/recheck_pairs.py), with vendor rows, one
# time-boxed, resumable sweep (stored as data/sweeps/h200-graph/recheck_val.csv.gz). RESUME=FILE starts from an earlier call's partial records.
#   BUDGET_S=570 [RESUME=data/sweeps/h200-graph/recheck_val.csv.gz] bash experiments/2026-11-23-graph-timing/graph_recheck_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
[ -n "${RESUME:-}" ] && cp "$RESUME" "$W/graph_recheck_val.csv.gz"
timed_sweep graph_recheck_val $(( $(left) - 10 )) --pairs bench/sweep/graph_recheck_val.txt.gz
