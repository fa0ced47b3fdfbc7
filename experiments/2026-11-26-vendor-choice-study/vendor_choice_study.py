#!/usr/bin/env python3
"""Studies behind the conv vendor choice's data, threshold rule and settings (CPU only; docs/history.md, "Vendor choice:
more training problems"; results in bench/results/2026-11-26-h200x4-vendor-choice-more/).

  PYTHONPATH=python python3 experiments/2026-11-26-vendor-choice-study/vendor_choice_study.py curve        # held-out quality on a share of the 800 problems
  PYTHONPATH=python python3 experiments/2026-11-26-vendor-choice-study/vendor_choice_study.py thresholds   # CV and held-out per grid threshold, 4,830 problems
  PYTHONPATH=python python3 experiments/2026-11-26-vendor-choice-study/vendor_choice_study.py params       # CV score of the threshold rule per LightGBM setting
  PYTHONPATH=python python3 experiments/2026-11-26-vendor-choice-study/vendor_choice_study.py weights      # CV score with the rows weighted by what a wrong choice costs
  PYTHONPATH=python python3 experiments/2026-11-26-vendor-choice-study/vendor_choice_study.py pick         # CV score with terms of the model's pick added

Every table is the choice against the faster of the two (our fastest measured config, cuDNN's heuristic kernel),
mean / P10 / time-weighted %. The held-out columns are for the record: nothing here is chosen on them.
"""
from __future__ import annotations

import argparse
import glob
import zlib

import numpy as np

from tilepick import vendor_choice as vc

GRAPH = "data/sweeps/h200-graph/"
HELDOUT = GRAPH + "recheck_val.csv.gz+" + GRAPH + "vendor_conv_val.csv.gz"
# The regressor the 800-problem choice shipped with; `params` compares others against it.
PARAMS_800 = dict(vc.PARAMS, num_leaves=15, feature_fraction=0.8)
ROUNDS_800 = 300


def training_table(more: bool):
    """vendor_choice.training_table of the conv problems with a graph-timed vendor row: the 800 of
    vendor_conv_train, plus (more) the 4,033 of vendor_conv_train2."""
    names = ["conv_train_short", "conv_train_20us", "vendor_conv_train"] + (["vendor_conv_train2"] if more else [])
    return vc.training_table(sorted(glob.glob("data/sweeps/h200/*_train*.csv.gz")), [GRAPH + n + ".csv.gz" for n in names],
                             "conv", "h200", sorted(glob.glob("data/problems/sweep/*_train*.txt")))


def heldout():
    ht = vc.heldout_table(HELDOUT)
    return ht, vc.problem_features(list(ht.problem), "h200")


def fmt(tab: dict, keys=("mean", "p10", "time_weighted")) -> str:
    return " ".join(f"{op[5:]} " + "/".join(f"{100 * tab[op]['choice'][k]:.1f}" for k in keys) for op in vc.OPS["conv"])


def use(params: dict, rounds: int) -> None:
    vc.PARAMS, vc.ROUNDS = params, rounds


def curve(a) -> None:
    use(PARAMS_800, ROUNDS_800)
    t, groups, X, y = training_table(more=False)
    ht, hX = heldout()
    print(len(t), "training problems,", groups.nunique(), "groups; threshold", a.threshold)
    for frac in (0.5, 0.75, 1.0):
        res = []
        for salt in range(3 if frac < 1 else 1):
            keep = groups.map(lambda g: zlib.crc32(f"{salt}{g}".encode()) % 1000 < frac * 1000).to_numpy()
            tab = vc.table(ht, vc.fit(X[keep], y[keep], a.threads).predict(hX), a.threshold)
            res.append([tab[o]["choice"][k] for o in vc.OPS["conv"] for k in ("mean", "time_weighted")])
        r = 100 * np.mean(res, axis=0)
        print(f"{frac:.2f} ({keep.sum()} problems): "
              + "  ".join(f"{o[5:]} {r[2 * i]:.1f}/tw {r[2 * i + 1]:.1f}" for i, o in enumerate(vc.OPS["conv"])))


def thresholds(a) -> None:
    use(PARAMS_800, ROUNDS_800)
    t, groups, X, y = training_table(more=True)
    cv = vc.cross_validated(X, y, groups, a.threads)
    ht, hX = heldout()
    hp = vc.fit(X, y, a.threads).predict(hX)
    for th in vc.THRESHOLDS:
        c = vc.table(t, cv, th)
        s = np.mean([[c[o]["choice"][k] for k in vc.CRITERIA] for o in vc.OPS["conv"]], axis=0)
        print(f"th {th:5}: CV {fmt(c)} | mean of ops: mean {100 * s[0]:.2f} p10 {100 * s[1]:.2f} tw {100 * s[2]:.2f}"
              f" all three {100 * s.mean():.2f} || held out {fmt(vc.table(ht, hp, th))}")


def params(a) -> None:
    t, groups, X, y = training_table(more=True)
    ht, hX = heldout()
    for name, kw, rounds in [("300x15 (800-problem setting)", {}, 300), ("600x15", {}, 600),
                             ("300x31", dict(num_leaves=31), 300), ("600x31", dict(num_leaves=31), 600),
                             ("1000x31 lr 0.03", dict(num_leaves=31, learning_rate=0.03), 1000),
                             ("300x15 min_data 40", dict(min_data_in_leaf=40), 300),
                             ("600x63", dict(num_leaves=63), 600), ("1200x31", dict(num_leaves=31), 1200),
                             ("600x31 feature_fraction 0.5", dict(num_leaves=31, feature_fraction=0.5), 600)]:
        use(dict(PARAMS_800, **kw), rounds)
        cv = vc.cross_validated(X, y, groups, a.threads)
        th, grid = vc.best_threshold(t, cv)
        hp = vc.fit(X, y, a.threads).predict(hX)
        print(f"{name:30s} threshold {th:5} CV score {100 * grid[str(th)]:.2f} | CV {fmt(vc.table(t, cv, th))} "
              f"|| held out {fmt(vc.table(ht, hp, th))}", flush=True)


def weights(a) -> None:
    from tilepick import train

    t, groups, X, y = training_table(more=True)
    ht, hX = heldout()
    folds = train.fold_of(groups)
    slower = np.maximum(t.ours.to_numpy(), t.vendor.to_numpy())
    for name, w in [("none (shipped)", None), ("|y|", np.abs(y) + 0.01), ("sqrt |y|", np.sqrt(np.abs(y)) + 0.1),
                    ("|y| x time share", (np.abs(y) + 0.01) * slower / np.median(slower)),
                    ("sqrt time share", np.sqrt(slower / np.median(slower)))]:
        cv = np.zeros(len(y))
        for f in range(train.FOLDS):
            te = folds == f
            cv[te] = vc.fit(X[~te], y[~te], a.threads, None if w is None else w[~te]).predict(X[te])
        th, grid = vc.best_threshold(t, cv)
        hp = vc.fit(X, y, a.threads, w).predict(hX)
        print(f"{name:18s} threshold {th:5} CV score {100 * grid[str(th)]:.2f} | CV {fmt(vc.table(t, cv, th))} "
              f"|| held out {fmt(vc.table(ht, hp, th))}", flush=True)


# Terms of the model's first choice (tilepick.select) beside the problem's: its analytic time estimate (the
# analytic fallback's model, as estimated_time_us) against the problem's roofline time, and its tiling terms.
PICK_TERMS = ("pad_eff", "wave_eff", "occupancy", "waves", "sm_fill")


def pick_columns(problems: list[str]) -> tuple[np.ndarray, list[str]]:
    import tilepick
    from tilepick import _core

    names = list(_core.feature_names())
    picks = [tilepick.select(p, "h200", 1).best for p in problems]
    F = np.asarray(_core.features_batch(problems, picks, "h200"))
    col = {n: F[:, names.index(n)] for n in ("log2_flops", "log2_min_bytes", "dev_peak_tflops", "dev_mem_bw_gbps")}
    flops = np.exp2(col["log2_flops"])
    est_us = np.array([_core.estimated_times(p, [c], "h200")[0] for p, c in zip(problems, picks)])
    roof_us = np.maximum(flops / (col["dev_peak_tflops"] * 1e12), np.exp2(col["log2_min_bytes"]) / (col["dev_mem_bw_gbps"] * 1e9)) * 1e6
    extra = [np.log(est_us), np.log(est_us / roof_us)] + [F[:, names.index(n)] for n in PICK_TERMS]
    return np.column_stack(extra), ["pick_log_est_us", "pick_log_est_over_roofline"] + ["pick_" + n for n in PICK_TERMS]


def pick(a) -> None:
    import lightgbm as lgb

    from tilepick import _core, train

    t, groups, X, y = training_table(more=True)
    ht, hX = heldout()
    E, enames = pick_columns(list(t.problem))
    hE, _ = pick_columns(list(ht.problem))
    base = list(_core.feature_names()[:_core.problem_feature_count()])
    folds = train.fold_of(groups)
    for name, cols in [("problem terms (shipped)", 0), ("+ pick estimate (2)", 2), ("+ pick estimate and tiling (7)", 7)]:
        Xv, hXv, names = np.hstack([X, E[:, :cols]]), np.hstack([hX, hE[:, :cols]]), base + enames[:cols]

        def fit(Xf, yf):
            return lgb.train(dict(vc.PARAMS, num_threads=a.threads), lgb.Dataset(Xf, yf, feature_name=names),
                             num_boost_round=vc.ROUNDS)

        cv = np.zeros(len(y))
        for f in range(train.FOLDS):
            te = folds == f
            cv[te] = fit(Xv[~te], y[~te]).predict(Xv[te])
        th, grid = vc.best_threshold(t, cv)
        hp = fit(Xv, y).predict(hXv)
        print(f"{name:32s} threshold {th:5} CV score {100 * grid[str(th)]:.2f} | CV {fmt(vc.table(t, cv, th))} "
              f"|| held out {fmt(vc.table(ht, hp, th))}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("study", choices=("curve", "thresholds", "params", "weights", "pick"))
    ap.add_argument("--threshold", type=float, default=-0.1, help="curve: the 800-problem choice's threshold")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    {"curve": curve, "thresholds": thresholds, "params": params, "weights": weights, "pick": pick}[a.study](a)


if __name__ == "__main__":
    main()
