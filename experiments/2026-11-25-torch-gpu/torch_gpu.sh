#!/usr/bin/env bash
# tilepick.torch on the device tool: its tests (tests/python/test_torch_ops.py, GPU cases included), the host
# time of one call taken apart (experiments/2026-11-25-host-cost/torch_host_breakdown.py), the end-to-end benchmark with its fp64 checks
# (bench/torch_e2e.py: torch vs tilepick heuristic, no first-call runs) and the step profile
# (bench/torch_profile.py: torch, auto, off; eager and CUDA-graph replay). Results: $OUT/results.tgz.
#   BUDGET_S=580 [MODELS=resnet50,convnext_t,llama_mlp] bash experiments/2026-11-25-torch-gpu/torch_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_all
timeout $(( $(left) - 10 )) python3 -m pytest -q -p no:cacheprovider tests/python/test_torch_ops.py >"$W/pytest.log" 2>&1
echo "pytest rc=$? after $(( $(date +%s) - START )) s: $(tail -1 "$W/pytest.log")"
timeout $(( $(left) - 10 )) python3 experiments/2026-11-25-host-cost/torch_host_breakdown.py >"$W/torch_host_breakdown.txt" 2>&1
grep "per call" "$W/torch_host_breakdown.txt"
models=${MODELS:-resnet50,convnext_t,llama_mlp}
timeout $(( $(left) - 10 )) python3 bench/torch_e2e.py --models "$models" --modes torch,tilepick_heuristic --no-first-call \
  --out "$W/e2e" >"$W/e2e.log" 2>&1
echo "e2e rc=$? after $(( $(date +%s) - START )) s"; grep -E "check vs fp64| ms |host time" "$W/e2e.log" | head -20
[ $(left) -gt 120 ] && timeout $(( $(left) - 10 )) python3 bench/torch_profile.py --out "$W/profile" --models "$models" \
  --modes torch,auto,off >"$W/profile.log" 2>&1
echo "profile rc=$?"; sed -n '/^| model/,/^$/p' "$W/profile/profile.md" 2>/dev/null
echo "after $(( $(date +%s) - START )) s"
