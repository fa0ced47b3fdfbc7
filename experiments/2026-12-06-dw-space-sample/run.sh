#!/usr/bin/env bash
# Does the depthwise space hold faster configs than the model's top 12 for batch-32 3x3 layers? A seeded sample of
# SAMPLE (default 400) fam=dw configs on each of problems.txt (three MobileNet-v2 / EfficientNet-B0-like 3x3 layers,
# every direction), cuDNN's rows in the same run; first
# v1_best_pairs.txt, each problem's best config of bench/results/2026-11-29-grouped-dw/v1-h200-baseline. One device call (carry .deps .commit):
#   BUDGET_S=330 bash experiments/2026-12-06-dw-space-sample/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-06-dw-space-sample
source bench/gpu_session.sh
build_cli
timed_sweep v1best 60 --pairs $HERE/v1_best_pairs.txt
timed_sweep dw $(( $(left) - 20 )) -f $HERE/problems.txt --family dw --sample "${SAMPLE:-400}"
python3 bench/sm90_compare.py "$W/dw.csv.gz" "$W/v1best.csv.gz" --family all > "$W/compare.txt" 2>&1
grep -v '^replay' "$W/compare.txt" | cut -c1-150 | head -20
