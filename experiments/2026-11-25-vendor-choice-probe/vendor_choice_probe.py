"""Probe (issue 5, dispatch): can a per-problem model choose between the vendor library's heuristic choice and
the learned model's pick, where one flag per model ("vendor_first") cannot (conv: the vendor is faster on most
problems, our depthwise kernels on others by far)?

Training rows: every H200 training problem with a vendor heuristic record; target log(vendor heuristic time /
our fastest measured time); inputs: the problem's leading feature columns (no config terms); a LightGBM
regressor (300 trees x 15 leaves). Held out: `tilepick eval --out` of the README eval (its
eval.csv: the model's whole-pool first choice and the vendor's heuristic choice, both timed). Decision: the
vendor when the predicted log ratio is below log(1 / MARGIN) (our pick runs at about MARGIN of our best).
Scores per op: time of the chosen kernel against the faster of the two (mean, P10, time-weighted).

  PYTHONPATH=python python3 experiments/2026-11-25-vendor-choice-probe/vendor_choice_probe.py EVAL_DIR [--margin 0.97] [--threads 2]
"""
import argparse
import glob
import sys
from pathlib import Path

import lightgbm as lgb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from tilepick import train  # noqa: E402
from tilepick.vendor_choice import problem_features as problem_rows, times_table as training_table  # noqa: E402


def summary(chosen: np.ndarray, best: np.ndarray) -> str:
    eff = best / chosen
    return f"{100 * eff.mean():5.1f} / {100 * np.percentile(eff, 10):5.1f} / tw {100 * best.sum() / chosen.sum():5.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("eval_dir", help="tilepick eval --out of the held-out records (eval.csv)")
    ap.add_argument("--margin", type=float, default=0.97)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    files = [f for f in sorted(glob.glob("data/sweeps/h200/*_train*.csv.gz"))]
    t = training_table(files)
    t["y"] = np.log(t.vendor / t.ours)  # the target: log(vendor heuristic time / our fastest measured)
    held = train.timed_beside_vendor(Path(a.eval_dir) / "eval.csv").reset_index()
    params = dict(objective="regression", learning_rate=0.05, num_leaves=15, min_data_in_leaf=10,
                  feature_fraction=0.8, bagging_fraction=0.8, bagging_freq=1, verbose=-1, num_threads=a.threads)
    print(f"training: {len(t)} problems with a vendor heuristic record; held out: {len(held)} problems")
    print("per op: chosen / faster of the two, mean / P10 / time-weighted (%)")
    for fam, ops in (("gemm", ["gemm"]), ("conv", ["conv_fwd", "conv_bwd_data", "conv_bwd_weight"])):
        tt = t[t.op.isin(ops)].reset_index(drop=True)
        X = problem_rows(list(tt.problem), "h200")
        model = lgb.train(params, lgb.Dataset(X, tt.y), num_boost_round=300)
        h = held[held.op.isin(ops)].reset_index(drop=True)
        pred = model.predict(problem_rows(list(h.problem), "h200"))
        vendor = pred < np.log(1 / a.margin)
        for op in ops:
            m = (h.op == op).to_numpy()
            ours, ven = h.own_first_us.to_numpy()[m], h.vendor_heur_us.to_numpy()[m]
            best = np.minimum(ours, ven)
            learned = np.where(vendor[m], ven, ours)
            print(f"  {op:16s} n={m.sum():4d} ours {summary(ours, best)} | vendor {summary(ven, best)} | "
                  f"per-problem model {summary(learned, best)} (vendor on {vendor[m].mean():.2f}, "
                  f"right on {((ven < ours) == vendor[m]).mean():.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
