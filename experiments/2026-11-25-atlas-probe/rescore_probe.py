"""Probe: how many of the student's best rows the teacher must re-score (a fixed count, or the rows within
DELTA of the student's best, between LO and HI), scored by the teacher against its own best over the whole
pool on tilepick.distill's held-out fifth of the distillation problems. Teacher scores come from the cache
experiments/2026-11-25-atlas-probe/atlas_probe.py (or tilepick.distill --cache) writes. Results: bench/results/2026-11-25-atlas-probe.txt.

  PYTHONPATH=python python3 experiments/2026-11-25-atlas-probe/rescore_probe.py gemm_half_h200 --cache /tmp/distill-cache
"""
import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

from tilepick import distill


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", help="model folder name under models/")
    ap.add_argument("--cache", default="/tmp/distill-cache")
    a = ap.parse_args()
    c = distill.core()
    op = "gemm" if a.model.startswith("gemm") else a.model.split("_half")[0]
    n_syn = distill.SYNTHETIC["gemm" if op == "gemm" else "conv"]
    base = distill.training_problems(op, "half", sorted(distill.ROOT.glob(distill.PROBLEM_FILES)))
    problems, origin = distill.sample_problems(base, n_syn, 11)
    pools, scores, _ = pickle.loads((Path(a.cache) / f"{a.model}.11.{n_syn}.pkl").read_bytes())
    rng = np.random.default_rng(11)
    held = set(rng.choice(len(base), size=max(1, len(base) // 5), replace=False).tolist())
    val = [i for i in range(len(problems)) if len(pools[i]) and origin[i] in held]
    X = c.features_batch([problems[i] for i in val for _ in pools[i]], [x for i in val for x in pools[i]], "h200", 2)
    flat = np.asarray(c.gbdt_predict(str(distill.ROOT / "models" / a.model / "fast" / "model.txt.gz"), X))
    student, at = {}, 0
    for i in val:
        student[i] = flat[at:at + len(pools[i])]
        at += len(pools[i])

    def run(rows_of) -> str:
        eff, rows = [], []
        for i in val:
            order = np.argsort(-student[i], kind="stable")
            m = rows_of(student[i][order])
            top = order[:m]
            pick = top[np.argmax(scores[i][top])]
            eff.append(np.exp(-(scores[i].max() - scores[i][pick])))
            rows.append(m)
        e = np.array(eff)
        return (f"mean {e.mean():.5f} p10 {np.quantile(e, .1):.5f} p1 {np.quantile(e, .01):.4f} min {e.min():.4f} "
                f"rows {np.mean(rows):.1f}")

    print(f"{a.model}: {len(val)} held-out problems")
    for m in (1, 2, 4, 8, 16, 24, 32):
        print(f"fixed {m}:", run(lambda v, m=m: min(m, len(v))))
    for d in (0.02, 0.05, 0.1, 0.15, 0.2):
        for lo, hi in ((2, 16), (4, 16), (4, 32), (2, 32)):
            print(f"delta {d} [{lo},{hi}]:",
                  run(lambda v, d=d, lo=lo, hi=hi: int(min(len(v), max(lo, min(hi, np.sum(v >= v[0] - d)))))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
