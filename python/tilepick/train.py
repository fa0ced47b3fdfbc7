"""Train the selection models: python -m tilepick.train RECORDS... --out models/

Reads raw sweep records, computes features through the C++ feature function (tilepick._core),
and trains one LightGBM model per (op, dtype family, arch). Three objectives are compared on the
same cross-validation folds, grouped by whole network (real networks) or full problem key
(synthetic shapes); early stopping uses an inner split of the training folds only. The best
objective per op is retrained on all rows and written as a model folder:
model.txt.gz, feature_spec.json, manifest.json.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tilepick import records as rec

OBJECTIVES = ("reg_tflops", "reg_rel", "lambdarank")
FOLDS = 5


def dtype_family(problem: str) -> str:
    """The selector's dtype family (half, tf32, fp8), from the C++ rule that keys the models."""
    from tilepick import _core

    return _core.dtype_family(problem)


def cv_group(problem: str, tag: str | None) -> str:
    """Whole networks stay together; synthetic and untagged shapes are their own family."""
    if tag and not tag.startswith("synth"):
        return tag.split(".")[0]
    return "shape:" + problem


def load_rows(paths: list[str], problem_files: list[str]) -> tuple[dict, pd.DataFrame]:
    header, df = rec.read_records(paths)
    df = df[(~df["is_vendor"]) & (~df["config"].str.startswith("fault="))]
    tags = {}
    for f in problem_files:
        tags.update(rec.read_problem_tags(f))
    from tilepick import _core

    keys = df["problem"].map(rec.problem_key)
    problems = df["problem"].unique()
    op = {p: _core.problem_op(p) for p in problems}
    family = {p: dtype_family(p) for p in problems}
    df = df.assign(tag=keys.map(tags), op=df["problem"].map(op), family=df["problem"].map(family))
    df["group"] = [cv_group(p, t if isinstance(t, str) else None) for p, t in zip(df["problem"], df["tag"])]
    return header, df


def add_targets(df: pd.DataFrame) -> pd.DataFrame:
    ok = df[df["status"] == "ok"].copy()
    ok = ok[ok["median_us"] > 0]
    oracle = ok.groupby("problem")["median_us"].transform("min")
    ok["eff"] = oracle / ok["median_us"]
    ok["y_tflops"] = np.log(ok["tflops"].clip(lower=1e-9))
    ok["y_rel"] = np.log(ok["median_us"] / oracle)
    # Graded relevance for ranking: 30 at the oracle, falling steeply with the slowdown.
    ok["y_rank"] = np.floor(30 * ok["eff"] ** 4).astype(int)
    return ok.sort_values(["problem", "config"]).reset_index(drop=True)


def compute_features(df: pd.DataFrame, arch: str) -> np.ndarray:
    from tilepick import _core

    return _core.features_batch(list(df["problem"]), list(df["config"]), arch, 0)


def params_for(objective: str, seed: int) -> dict:
    base = dict(learning_rate=0.08, num_leaves=63, min_data_in_leaf=10, feature_fraction=0.9,
                bagging_fraction=0.8, bagging_freq=1, lambda_l2=1.0, seed=seed, deterministic=True,
                force_row_wise=True, num_threads=os.cpu_count() or 2, verbose=-1)
    if objective == "lambdarank":
        base.update(objective="lambdarank", metric="ndcg", eval_at=[1, 5], lambdarank_truncation_level=40,
                    label_gain=[float(i) for i in range(31)])
    else:
        base.update(objective="regression", metric="l2")
    return base


def target(df: pd.DataFrame, objective: str) -> np.ndarray:
    return {"reg_tflops": df["y_tflops"], "reg_rel": df["y_rel"], "lambdarank": df["y_rank"]}[objective].to_numpy()


def score_sign(objective: str) -> float:
    """Predictions -> 'higher is better' scores."""
    return -1.0 if objective == "reg_rel" else 1.0


def dataset(X, df, objective, lgb, ref=None):
    kw = {}
    if objective == "lambdarank":
        kw["group"] = df.groupby("problem", sort=False).size().to_numpy()
    from tilepick import _core

    return lgb.Dataset(X, label=target(df, objective), reference=ref, free_raw_data=False,
                       feature_name=list(_core.feature_names()), **kw)


def fit(X, df, objective, seed, rounds=None, init_model=None):
    """Early stopping on an inner split (10% of the groups) unless `rounds` is fixed."""
    import lightgbm as lgb

    params = params_for(objective, seed)
    if rounds is not None:
        return lgb.train(params, dataset(X, df, objective, lgb), num_boost_round=rounds, init_model=init_model)
    groups = df["group"].unique()
    rng = np.random.default_rng(seed)
    inner = set(rng.choice(groups, size=max(1, len(groups) // 10), replace=False))
    tr = ~df["group"].isin(inner).to_numpy()
    dtr = dataset(X[tr], df[tr], objective, lgb)
    dva = dataset(X[~tr], df[~tr], objective, lgb, ref=dtr)
    return lgb.train(params, dtr, num_boost_round=1500, valid_sets=[dva], init_model=init_model,
                     callbacks=[lgb.early_stopping(60, verbose=False)])


def efficiency(df: pd.DataFrame, score: np.ndarray) -> pd.DataFrame:
    """Per problem: efficiency of the argmax-score config (ties broken by config string)."""
    d = df.assign(score=score)
    d = d.sort_values(["problem", "score", "config"], ascending=[True, False, True])
    top = d.groupby("problem", sort=False).head(1).set_index("problem")
    oracle = df.groupby("problem")["median_us"].min()
    out = pd.DataFrame({"eff": oracle / top["median_us"]})
    # top-5: the oracle is among the five best-scored configs (2% tie band)
    top5 = d.groupby("problem", sort=False).head(5).groupby("problem")["median_us"].min()
    out["top1"] = out["eff"] >= 1 / 1.02
    out["top5"] = (oracle / top5) >= 1 / 1.02
    return out


def summarize(e: pd.DataFrame) -> dict:
    x = e["eff"].to_numpy()
    return {"problems": int(len(x)), "mean": float(x.mean()), "median": float(np.median(x)),
            "p10": float(np.quantile(x, 0.10)), "p1": float(np.quantile(x, 0.01)), "min": float(x.min()),
            "top1": float(e["top1"].mean()), "top5": float(e["top5"].mean())}


def fold_of(groups: pd.Series) -> np.ndarray:
    """Deterministic grouped folds: whole groups, balanced by sorting groups by size."""
    sizes = groups.value_counts().sort_index().sort_values(ascending=False, kind="stable")
    load, assign = [0] * FOLDS, {}
    for g, n in sizes.items():
        f = int(np.argmin(load))
        assign[g], load[f] = f, load[f] + n
    return groups.map(assign).to_numpy()


def cross_validate(X, df, objective, seed):
    folds = fold_of(df["group"])
    parts, iters = [], []
    for f in range(FOLDS):
        te = folds == f
        if not te.any() or te.all():
            continue
        model = fit(X[~te], df[~te], objective, seed)
        iters.append(model.best_iteration or model.current_iteration())
        s = score_sign(objective) * model.predict(X[te], num_iteration=model.best_iteration or None)
        parts.append(efficiency(df[te], s))
    return summarize(pd.concat(parts)), int(np.median(iters)) if iters else 100


def negate_leaves(text: str) -> str:
    """A model whose predictions are the negation of `text`'s (exact in floating point)."""
    def neg(line: str) -> str:
        key, vals = line.split("=", 1)
        return key + "=" + " ".join(v[1:] if v.startswith("-") else "-" + v for v in vals.split())
    # tree_sizes holds byte counts of the tree blocks, which the signs change: LightGBM and the C++
    # evaluator parse the trees sequentially without it.
    return "\n".join(neg(l) if l.startswith("leaf_value=") else l for l in text.split("\n")
                     if not l.startswith("tree_sizes="))


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, check=True).stdout.strip()
    except Exception:  # noqa: BLE001 - a copied tree without git
        return "unknown"


def train_group(name, df, X, args, header, out_dir, val=None):
    from tilepick import _core

    cv = {}
    best_iter = {}
    for obj in args.objectives:
        cv[obj], best_iter[obj] = cross_validate(X, df, obj, args.seed)
        print(f"  {name} {obj:<10} CV mean {cv[obj]['mean']:.4f} p10 {cv[obj]['p10']:.4f} "
              f"min {cv[obj]['min']:.4f} top1 {cv[obj]['top1']:.3f} ({best_iter[obj]} rounds)", flush=True)
    best = max(args.objectives, key=lambda o: (round(cv[o]["mean"], 4), cv[o]["p10"]))
    init = None
    if args.warm_start:
        prev = Path(args.warm_start) / name / "model.txt.gz"
        if prev.exists():
            init = str(prev.with_suffix(""))
            Path(init).write_text(gzip.open(prev, "rt").read())
    rounds = max(20, int(best_iter[best] * 1.1))
    model = fit(X, df, best, args.seed, rounds=rounds, init_model=init)
    text = model.model_to_string()
    if score_sign(best) < 0:
        text = negate_leaves(text)
    folder = out_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(folder / "model.txt.gz", "wb", mtime=0) as f:
        f.write(text.encode())
    op, family, arch = name.rsplit("_", 2)
    spec = {"feature_names": list(_core.feature_names()), "schema_hash": _core.feature_schema_hash(),
            "feature_version": int(_core.feature_version()), "space_hash": _core.config_space_hash(op),
            "op": op, "dtype_family": family, "arch": arch, "objective": best, "score": "higher_is_better"}
    (folder / "feature_spec.json").write_text(json.dumps(spec, indent=1) + "\n")
    manifest = {
        "data": [{"file": p, "rows": int(n)} for p, n in df.groupby("source").size().items()],
        "rows": int(len(df)), "problems": int(df["problem"].nunique()), "groups": int(df["group"].nunique()),
        "objective": best, "rounds": rounds, "params": params_for(best, args.seed), "cv": cv,
        "device": header.get("devices", [{}])[0].get("name", ""), "commit": git_commit(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "warm_start": init is not None,
    }
    if val is not None and len(val[0]):
        vdf, vX = val
        s = _core.gbdt_predict(str(folder / "model.txt.gz"), vX)
        manifest["validation"] = summarize(efficiency(vdf, s))
        manifest["validation_files"] = sorted(vdf["source"].unique().tolist())
        print(f"  {name} held-out networks: {json.dumps(manifest['validation'])}", flush=True)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str) + "\n")
    if init:
        os.unlink(init)
    return manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tilepick.train", description=__doc__.split("\n")[0])
    ap.add_argument("records", nargs="+", help="training record files (.csv.gz)")
    ap.add_argument("--val", nargs="*", default=[], help="held-out record files (whole networks absent from training)")
    ap.add_argument("--problems-file", nargs="*", default=[], help="problem files with name: tags (network groups)")
    ap.add_argument("--out", default="models", help="models directory")
    ap.add_argument("--arch", default="h200", help="arch spec the features use (data/arch)")
    ap.add_argument("--objectives", nargs="+", default=list(OBJECTIVES), choices=OBJECTIVES)
    ap.add_argument("--only", nargs="*", default=[], help="train only these model names (e.g. gemm_f16_h200)")
    ap.add_argument("--warm-start", help="models directory whose models continue training")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)

    header, raw = load_rows(args.records, args.problems_file)
    df = add_targets(raw)
    vdf_all = add_targets(load_rows(args.val, args.problems_file)[1]) if args.val else None
    out_dir = Path(args.out)
    names = sorted({f"{o}_{f}_{args.arch}" for o, f in zip(df["op"], df["family"])})
    for name in names:
        if args.only and name not in args.only:
            continue
        op, family, _ = name.rsplit("_", 2)
        part = df[(df["op"] == op) & (df["family"] == family)].reset_index(drop=True)
        print(f"{name}: {len(part)} rows, {part['problem'].nunique()} problems, {part['group'].nunique()} groups",
              flush=True)
        X = compute_features(part, args.arch)
        val = None
        if vdf_all is not None:
            v = vdf_all[(vdf_all["op"] == op) & (vdf_all["family"] == family)].reset_index(drop=True)
            val = (v, compute_features(v, args.arch) if len(v) else None)
        train_group(name, part, X, args, header, out_dir, val)
    return 0


if __name__ == "__main__":
    sys.exit(main())
