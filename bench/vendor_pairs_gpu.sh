#!/usr/bin/env bash
# The vendor's heuristic kernel next to the model's first choice, in one run on the lent GPU: each pair list
# bench/sweep/NAME.txt.gz ('problem|config', e.g. bench/model_pairs.py -k 1 --kp 0 --arch A) is swept with the
# cuBLASLt / cuDNN baselines, CUDA-graph timed, time-boxed and resumable (RESUME_DIR=DIR starts NAME from
# DIR/NAME.csv.gz). On an H100 it first runs bench/h100_dispatch_check.sh (the live dispatch path: vendor_first,
# the per-problem vendor choice). Records: data/sweeps/h100-graph/NAME.csv.gz (data/sweeps/README.md).
#   vendor_gemm_val  the 320 bf16 held-out GEMMs, first choice of the models serving h100_sxm (fast)
#   vendor_conv_val  the 1,030 bf16 held-out convs, the same
#   vendor_val_f16   the f16 held-out networks (gemm_val_f16: 80 GEMMs, conv_val_f16: 130 convs), the same
#   vendor_e2e_nets  the conv layers of bench/torch_e2e.py's ResNet-50 and ConvNeXt-T at batch 32 (training networks)
#   BUDGET_S=570 LISTS="vendor_gemm_val vendor_conv_val" [RESUME_DIR=dir] [DISPATCH_CHECK=0] bash bench/vendor_pairs_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
build_cli
if [ "${DISPATCH_CHECK:-1}" = 1 ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then
  OUT="$W" bash bench/h100_dispatch_check.sh
  echo "dispatch check after $(( $(date +%s) - START )) s"
fi
for list in ${LISTS:-vendor_gemm_val vendor_conv_val}; do
  [ -n "${RESUME_DIR:-}" ] && [ -f "$RESUME_DIR/$list.csv.gz" ] && cp "$RESUME_DIR/$list.csv.gz" "$W/$list.csv.gz"
  timed_sweep "$list" $(( $(left) - 10 )) --pairs "bench/sweep/$list.txt.gz"
done
