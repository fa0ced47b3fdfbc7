#!/usr/bin/env bash
# H100 transfer check of the H200-trained models (docs/selection.md, "Serving another device"): on an
# H100 SXM, per held-out problem (every GEMM of gemm_val/gemm_val2, conv_val, every third of conv_val2)
# the H200 graph records' fastest 5 (plus any within 3%, at most 8), the models' first 4 selecting for
# h100_sxm (fast and full) and the analytic fallback's first choice there (bench/sweep/h100_transfer_val.txt.gz,
# bench/recheck_pairs.py --arch h100_sxm), CUDA-graph timed, no vendor rows, one time-boxed, resumable sweep
# (stored as data/sweeps/h100-graph/transfer_val.csv.gz). LIST=h100_transfer_val2: the rest of conv_val2 and
# the f16 held-out sets (gemm_val_f16, conv_val_f16) the same way (transfer_val2.csv.gz). LIST=h100_fallback_val:
# the analytic fallback's first choices on those problems, and tf32 GEMMs of gemm_val with 32 sampled configs
# and both fallbacks' first choices (experiments/2026-11-25-analytic-fallback/fallback_pairs.py; fallback_val.csv.gz); LIST=h100_fallback_val2: those
# first choices that list missed (it broke score ties by pool order, the selector by config string;
# fallback_val2.csv.gz); LIST=h100_fallback_val3: the depthwise first choices of the fallback with its
# depthwise term (fallback_val3.csv.gz). RESUME=FILE starts
# from an earlier call's records. Refuses to run on anything but an H100 SXM (one device kind per file).
#   BUDGET_S=570 [LIST=h100_transfer_val2] [RESUME=data/sweeps/h100-graph/transfer_val.csv.gz] bash bench/h100_transfer_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
[ "$gpu" = "NVIDIA H100 80GB HBM3" ] || { echo "h100_transfer_gpu: this GPU is '$gpu', not an H100 SXM"; exit 3; }
source bench/gpu_session.sh
build_cli
list=${LIST:-h100_transfer_val}
[ -n "${RESUME:-}" ] && cp "$RESUME" "$W/$list.csv.gz"
timed_sweep "$list" $(( $(left) - 10 )) --pairs "bench/sweep/$list.txt.gz" --no-vendor
