"""Pairs that measure the analytic fallback (src/select/heuristic.cpp) on a device: per problem its first choice
over the whole legal pool (the selector's own, `_core.selector_rank` with no models), optionally the roofline-only ranking's first choice (the fallback before 2026-11-25:
the smallest est_time_us feature) and N legal configs sampled with a seed (an oracle for problems no other record
covers), less the pairs the given record files hold. Output: 'problem|config' lines for `tilepick sweep --pairs`.

  PYTHONPATH=python python3 experiments/2026-11-25-analytic-fallback/fallback_pairs.py PROBLEMS.txt... --arch h100_sxm [--dtype f32|e4m3:e4m3:bf16]
      [--layout rcr] [--sample 32] [--roofline] [--records R.csv.gz...] --out PAIRS.txt[.gz]
"""
import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))  # model_pairs
from fallback_eval import fallback_choice, first  # noqa: E402
from model_pairs import open_out, problems_of  # noqa: E402
from tilepick import _core  # noqa: E402
from tilepick.records import read_records  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--arch", required=True)
    ap.add_argument("--dtype", help="replace each problem's dtype token (GEMM: f32 for tf32, e4m3:e4m3:bf16 for fp8)")
    ap.add_argument("--layout", help="replace each GEMM's layout (fp8 needs rcr)")
    ap.add_argument("--sample", type=int, default=0, help="legal configs sampled per problem (seed 7)")
    ap.add_argument("--roofline", action="store_true", help="also the roofline-only first choice (min est_time_us)")
    ap.add_argument("--records", nargs="*", default=[])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    done = set()
    if a.records:
        _, df = read_records(a.records)
        done = set(zip(df.problem, df.config))
    est = list(_core.feature_names()).index("est_time_us")
    rng = np.random.default_rng(7)
    n = n_problems = 0
    with open_out(a.out) as f:
        for text in dict.fromkeys(p for file in a.problems for p in problems_of(file)):
            if a.dtype:
                text = re.sub(r"\b(f16|bf16|f32|e4m3:e4m3:bf16)\b", a.dtype, text)
            if a.layout:
                text = re.sub(r"^gemm [rc]{3}\b", "gemm " + a.layout, text)
            try:
                p = _core.canonical_problem(text)
            except ValueError as e:
                sys.exit(f"fallback_pairs: {text}: {e}")
            pool = list(_core.legal_configs(p, a.arch))
            if not pool:
                continue
            picks = [fallback_choice(p, a.arch)]
            if a.roofline:
                picks.append(first(pool, -_core.features_batch([p] * len(pool), pool, a.arch, 2)[:, est]))
            if a.sample:
                picks += [pool[i] for i in sorted(rng.choice(len(pool), size=min(a.sample, len(pool)), replace=False))]
            n_problems += 1
            for c in dict.fromkeys(picks):
                if (p, c) not in done:
                    f.write(f"{p}|{c}\n")
                    n += 1
    print(f"{a.out}: {n} pairs for {n_problems} problems")
    return 0


if __name__ == "__main__":
    sys.exit(main())
