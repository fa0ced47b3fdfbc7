"""Per-problem vendor choice (docs/selection.md, "Vendor choice"): for each problem of a model family, should
dispatch's heuristic strategy run the vendor library's heuristic kernel (cuDNN, cuBLASLt) or the model's pick?

A LightGBM regressor on the problem's leading feature columns (`_core.problem_features_batch`, the C++ function
the selector calls) predicts y = ln(vendor heuristic time / tilepick time). Training rows: every training problem
whose records hold a vendor heuristic row, tilepick time = the fastest tilepick config measured there (the model's
pick runs at about 97% of it). The vendor runs when the prediction is below a threshold, chosen on grouped
cross-validation (whole networks) to maximize the mean, P10 and time-weighted efficiency against the faster of the two.

Held-out checks (`--heldout`): `tilepick eval --out` folders (eval.csv: the model's whole-pool first choice and the
vendor's heuristic choice, timed in one run), record files that hold one tilepick config per problem (the
model's pick, bench/model_pairs.py -k 1) with the vendor rows (bench/vendor_pairs_gpu.sh), and record files joined
by '+' (the later ones re-measure the first, e.g. recheck_val.csv.gz+vendor_conv_val.csv.gz: cuDNN's graph API).
Scored per op: the chosen kernel's time against the faster of the two, mean / P10 / time-weighted. Training
labels: `--remeasured` CUDA-graph files replace a problem's tilepick or vendor time; a vendor heuristic that
failed the output check counts as 8x slower than ours (unusable), in labels and held-out scores.

Writes MODELS/<stem>.vendor_choice.txt.gz (stem: the family's shared teacher file, e.g. conv_half_h200), and in
every model folder of the family and arch: feature_spec.json "vendor_choice" {model_file, threshold} (read by the
selector, include/tilepick/selector.hpp) and manifest.json "vendor_choice" (data, parameters, CV, held-out).

  PYTHONPATH=python python3 -m tilepick.vendor_choice --family conv --arch h200 \\
      --remeasured data/sweeps/h200-graph/{conv_train_short,conv_train_20us,vendor_conv_train,vendor_conv_train2}.csv.gz \\
      --heldout data/sweeps/h200-graph/recheck_val.csv.gz+data/sweeps/h200-graph/vendor_conv_val.csv.gz --out models
      [--dry-run]
"""
from __future__ import annotations

import argparse
import datetime
import glob
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from tilepick import records as rec
from tilepick import train

OPS = {"conv": ["conv_fwd", "conv_bwd_data", "conv_bwd_weight"], "gemm": ["gemm"]}
# Chosen on grouped CV over the 4,830 conv problems of 2026-11-26 (300 x 15 leaves, right for 800, scored 92.6 there;
# 600 x 31 with feature_fraction 0.5 94.9; experiments/2026-11-26-vendor-choice-study/vendor_choice_study.py params).
PARAMS = dict(objective="regression", learning_rate=0.05, num_leaves=31, min_data_in_leaf=10, feature_fraction=0.5,
              bagging_fraction=0.8, bagging_freq=1, seed=7, deterministic=True, force_row_wise=True, verbose=-1)
ROUNDS = 600
THRESHOLDS = (-0.3, -0.2, -0.1, 0.0, 0.03, 0.1, 0.2, 0.3, 0.5)


def problem_features(problems: list[str], arch: str) -> np.ndarray:
    from tilepick import _core

    return np.asarray(_core.problem_features_batch(problems, arch))


# A problem whose vendor heuristic kernel failed the output check (and never passed) counts the vendor as this
# many times slower than ours: unusable, in labels (ln 8) and in scores alike.
UNUSABLE = 8.0


def fastest(files: list[str]) -> tuple[pd.Series, pd.Series]:
    """Per problem of the record files: the fastest tilepick time, and the vendor heuristic's time (inf where its
    only heuristic records failed the output check)."""
    _, df = rec.read_records(files)
    ok = df[(df.status == "ok") & (df.median_us > 0) & ~df.config.str.startswith("fault=")]
    ours = ok[~ok.is_vendor].groupby("problem").median_us.min()
    is_heur = df.config.str.startswith("vendor=") & df.config.str.endswith(":heur")
    heur = ok[is_heur.loc[ok.index]].groupby("problem").median_us.min()
    wrong = pd.Index(df[is_heur & (df.status == "wrong")].problem.unique()).difference(heur.index)
    return ours, pd.concat([heur, pd.Series(np.inf, index=wrong)])


def times_table(files: list[str], remeasured: list[str] | None = None) -> pd.DataFrame:
    """Per problem: the fastest tilepick time and the vendor heuristic's time (problems with both), op, tag group.
    `remeasured` record files (CUDA-graph timed) replace each of the two times of the problems they hold: their
    tilepick records (all of a problem's pairs) or their vendor rows, so no time mixes two timing methods."""
    from tilepick import _core

    ours, heur = fastest(files)
    if remeasured:
        r_ours, r_heur = fastest(remeasured)
        ours, heur = r_ours.combine_first(ours), r_heur.combine_first(heur)
    t = pd.DataFrame({"ours": ours, "vendor": heur}).dropna().rename_axis("problem").reset_index()
    t["vendor_failed"] = np.isinf(t.vendor)
    t.loc[t.vendor_failed, "vendor"] = UNUSABLE * t.ours[t.vendor_failed]
    t["op"] = [_core.problem_op(p) for p in t.problem]
    return t


def training_table(files: list[str], remeasured: list[str], family: str, arch: str, problem_files: list[str]):
    """(table, CV groups, feature rows, labels) of the family's half-dtype training problems that have both times:
    times_table's columns, grouped by whole network / shape (train.cv_group), labels ln(vendor / ours)."""
    from tilepick import _core

    tags = {}
    for f in problem_files:
        tags.update(rec.read_problem_tags(f))
    t = times_table(files, remeasured)
    t = t[t.op.isin(OPS[family]) & (t.problem.map(_core.dtype_family) == "half")].reset_index(drop=True)
    groups = pd.Series([train.cv_group(p, tags.get(rec.problem_key(p))) for p in t.problem])
    return t, groups, problem_features(list(t.problem), arch), np.log(t.vendor / t.ours).to_numpy()


def heldout_table(path: str) -> pd.DataFrame:
    """A `tilepick eval --out` folder (its whole-pool first choice, where measured), a record file, or record files
    joined by '+' (A+B: B re-measures A as --remeasured does, e.g. B holds cuDNN's graph-API rows of A's problems)."""
    p = Path(path)
    if p.is_dir():
        e = train.timed_beside_vendor(p / "eval.csv")
        return pd.DataFrame({"problem": e.problem, "ours": e.own_first_us, "vendor": e.vendor_heur_us,
                             "op": e.op}).reset_index(drop=True)
    first, *rest = path.split("+")
    return times_table([first], rest)


def scores(ours: np.ndarray, vendor: np.ndarray, chose_vendor: np.ndarray) -> dict:
    """The chosen kernel's time against the faster of the two: mean, P10, time-weighted (fractions)."""
    best = np.minimum(ours, vendor)
    chosen = np.where(chose_vendor, vendor, ours)
    eff = best / chosen
    return {"problems": int(len(eff)), "mean": float(eff.mean()), "p10": float(np.quantile(eff, 0.1)),
            "time_weighted": float(best.sum() / chosen.sum()), "vendor_share": float(chose_vendor.mean()),
            "right": float(((vendor < ours) == chose_vendor).mean())}


def table(t: pd.DataFrame, pred: np.ndarray, threshold: float) -> dict:
    """Per op: tilepick alone, the vendor alone, and the choice at `threshold`."""
    out = {}
    for op, g in t.groupby("op"):
        m = (t.op == op).to_numpy()
        o, v = t.ours.to_numpy()[m], t.vendor.to_numpy()[m]
        out[op] = {"tilepick": scores(o, v, np.zeros(len(o), bool)), "vendor": scores(o, v, np.ones(len(o), bool)),
                   "choice": scores(o, v, pred[m] < threshold)}
    return out


def predict_text(text: str, X: np.ndarray) -> np.ndarray:
    """Predictions of a model text by the C++ evaluator that dispatch runs."""
    from tilepick import _core

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "model.txt"
        path.write_text(text)
        return np.asarray(_core.gbdt_predict(str(path), X))


def fit(X: np.ndarray, y: np.ndarray, threads: int, weight: np.ndarray | None = None):
    import lightgbm as lgb

    from tilepick import _core

    names = _core.feature_names()[:_core.problem_feature_count()]  # the selector checks them
    return lgb.train(dict(PARAMS, num_threads=threads), lgb.Dataset(X, y, weight=weight, feature_name=names),
                     num_boost_round=ROUNDS)


def cross_validated(X: np.ndarray, y: np.ndarray, groups: pd.Series, threads: int) -> np.ndarray:
    """Out-of-fold predictions over train.fold_of's grouped folds (whole networks)."""
    folds = train.fold_of(groups)
    pred = np.zeros(len(y))
    for f in range(train.FOLDS):
        te = folds == f
        if te.any() and not te.all():
            pred[te] = fit(X[~te], y[~te], threads).predict(X[te])
    return pred


# What a threshold is chosen for: the choice's mean, P10 and time-weighted efficiency, equally. Time-weighted alone
# (until 2026-11-26) bought +0.7 of it for -5 points of P10 on the 4,830-problem CV (docs/history.md).
CRITERIA = ("mean", "p10", "time_weighted")


def criterion(s: dict) -> float:
    """The mean of a scores() dict's CRITERIA."""
    return float(np.mean([s[k] for k in CRITERIA]))


def best_threshold(t: pd.DataFrame, pred: np.ndarray) -> tuple[float, dict]:
    """The grid threshold with the best mean over ops of the choice's criterion (ties: the lower one)."""
    grid = {}
    for th in THRESHOLDS:
        per_op = table(t, pred, th)
        grid[th] = float(np.mean([criterion(v["choice"]) for v in per_op.values()]))
    best = max(THRESHOLDS, key=lambda th: (round(grid[th], 6), -th))
    return best, {str(th): v for th, v in grid.items()}


def fmt(s: dict) -> str:
    return f"{100 * s['mean']:5.1f} / {100 * s['p10']:5.1f} / tw {100 * s['time_weighted']:5.1f}"


def print_table(title: str, tab: dict) -> None:
    print(title + "  (chosen / faster of the two: mean / P10 / time-weighted %)")
    for op, r in tab.items():
        c = r["choice"]
        print(f"  {op:16s} n={c['problems']:4d} tilepick {fmt(r['tilepick'])} | vendor {fmt(r['vendor'])} | "
              f"choice {fmt(c)} (vendor on {c['vendor_share']:.2f}, right on {c['right']:.2f})")


def family_folders(models: Path, family: str, arch: str) -> list[Path]:
    out = []
    for spec_path in sorted(models.glob("*/feature_spec.json")):
        spec = json.loads(spec_path.read_text())
        if spec.get("op") in OPS[family] and spec.get("dtype_family") == "half" and spec.get("arch") == arch:
            out.append(spec_path.parent)
    return out


def write(models: Path, folders: list[Path], text: str, threshold: float, record: dict) -> Path:
    stem = train.model_file(folders[0]).name.split(".")[0] if len(folders) > 1 else folders[0].name
    path = models / f"{stem}.vendor_choice.txt.gz"
    train.write_text_gz(path, text)
    for folder in folders:
        spec_path, manifest_path = folder / "feature_spec.json", folder / "manifest.json"
        spec = json.loads(spec_path.read_text())
        spec["vendor_choice"] = {"model_file": f"../{path.name}", "threshold": threshold,
                                 "model_text_fnv": train.text_fnv(text)}
        spec_path.write_text(json.dumps(spec, indent=1) + "\n")
        manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
        manifest["vendor_choice"] = record
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"{folder}: vendor_choice {path.name}, threshold {threshold}")
    return path


def main(argv=None) -> int:
    from tilepick import _core

    ap = argparse.ArgumentParser(prog="python -m tilepick.vendor_choice", description=__doc__.splitlines()[0])
    ap.add_argument("--family", choices=sorted(OPS), default="conv", help="the model family (its ops, half dtypes)")
    ap.add_argument("--arch", default="h200", help="arch of the training records and of the model folders")
    ap.add_argument("--records", nargs="+", default=None,
                    help="training record files with vendor heuristic rows (default: data/sweeps/<arch>/*_train*.csv.gz)")
    ap.add_argument("--remeasured", nargs="*", default=[],
                    help="record files that re-measure training problems with CUDA graphs (data/sweeps/<arch>-graph/: "
                         "conv_train_*, vendor_conv_train*): a problem's tilepick or vendor time found there replaces the "
                         "one of --records")
    ap.add_argument("--problems-file", nargs="*", default=None,
                    help="problem files whose tags group the CV folds (default: data/problems/sweep/*_train*.txt)")
    ap.add_argument("--heldout", nargs="*", default=[], help="tilepick eval --out folders or record files (below)")
    ap.add_argument("--heldout-arch", nargs="*", default=[],
                    help="the arch each --heldout item was measured on, for its feature rows (default: --arch)")
    ap.add_argument("--out", default="models", help="models dir to write into")
    ap.add_argument("--threads", type=int, default=train.THREADS)
    ap.add_argument("--dry-run", action="store_true", help="print the tables, write nothing")
    a = ap.parse_args(argv)
    files = a.records or sorted(glob.glob(f"data/sweeps/{a.arch}/*_train*.csv.gz"))
    if any("_val" in Path(f).name for f in files):
        ap.error("training records must not be held-out files (*_val*)")
    if len(a.heldout_arch) not in (0, len(a.heldout)):
        ap.error("--heldout-arch needs one arch per --heldout item")
    problem_files = a.problems_file if a.problems_file is not None else sorted(glob.glob("data/problems/sweep/*_train*.txt"))
    if any("_val" in Path(f).name for f in a.remeasured):
        ap.error("--remeasured records must not be held-out files (*_val*)")
    t, groups, X, y = training_table(files, a.remeasured, a.family, a.arch, problem_files)
    if len(t) < 50:
        ap.error(f"only {len(t)} training problems of family {a.family} with a vendor heuristic record")
    print(f"  {int(t.vendor_failed.sum())} problems whose vendor heuristic failed the output check: vendor {UNUSABLE:g}x ours")
    print(f"training: {len(t)} problems ({groups.nunique()} CV groups) from {len(files)} record files")
    cv_pred = cross_validated(X, y, groups, a.threads)
    threshold, grid = best_threshold(t, cv_pred)
    cv = table(t, cv_pred, threshold)
    print(f"threshold {threshold} (grid, mean over ops of mean, P10 and time-weighted: "
          + ", ".join(f"{k} {100 * v:.1f}" for k, v in grid.items()) + ")")
    print_table("grouped CV, against the fastest tilepick config measured", cv)

    model = fit(X, y, a.threads)
    text = train.prediction_text(model.model_to_string())
    heldout = {}
    for i, h in enumerate(a.heldout):
        arch = a.heldout_arch[i] if a.heldout_arch else a.arch
        ht = heldout_table(h)
        ht = ht[ht.op.isin(OPS[a.family])].reset_index(drop=True)
        pred = predict_text(text, problem_features(list(ht.problem), arch))
        heldout[h] = {"arch": arch, "ops": table(ht, pred, threshold)}
        print_table(f"held out: {h} ({arch})", heldout[h]["ops"])
    if a.dry_run:
        return 0
    folders = family_folders(Path(a.out), a.family, a.arch)
    if not folders:
        ap.error(f"no model folder of family {a.family} and arch {a.arch} under {a.out}")
    record = {"target": "ln(vendor heuristic time / fastest tilepick time measured)", "threshold": threshold,
              "decision": "the vendor runs when the prediction is below the threshold",
              "data": files, "remeasured": a.remeasured, "problems": int(len(t)), "params": PARAMS, "rounds": ROUNDS,
              "threshold_grid_cv_time_weighted": grid, "cv": cv, "heldout": heldout,
              "commit": train.git_commit(), "date": datetime.date.today().isoformat(),
              "command": "python -m tilepick.vendor_choice " + " ".join(argv if argv is not None else sys.argv[1:])}
    write(Path(a.out), folders, text, threshold, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
