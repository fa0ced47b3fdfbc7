"""Train the selection models: python -m tilepick.train RECORDS... --out models/

Reads raw sweep records, computes features through the C++ feature function (tilepick._core),
and trains one LightGBM model per (op, dtype family, arch); the conv directions of a family share
one model (--pool-conv), written to each direction's folder. The --objectives are compared on the
same cross-validation folds, grouped by whole network (real networks) or full problem key
(synthetic shapes); early stopping uses an inner split of the training folds only. The best
objective is retrained on all rows and written as a model folder: model.txt.gz, feature_spec.json,
manifest.json. A model is a bag of boosters trained with different seeds (BAG, --bag), stored as
one LightGBM text model whose score is their sum.

Hyperparameters per op (PARAMS) were chosen by grouped cross-validation on the training networks
only (bench/results/; each model's manifest.json "cv" holds its objectives' numbers).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from tilepick import records as rec

OBJECTIVES = ("reg_tflops", "reg_rel", "lambdarank")
# Every objective is compared on the same folds by default and the best is kept (manifest "cv"); the shipped
# models' comparisons, with their own recipes, are in their manifests' "cv_compared" (--compare-only).
DEFAULT_OBJECTIVES = OBJECTIVES
FOLDS = 5
# LightGBM settings per op, chosen by grouped CV (bench/results/2026-11-22-h200-conv-hparams/). Conv
# (~147,000 rows of ~3,100 problems): GEMM's tree size, stronger column subsampling and L2.
BASE_PARAMS = dict(learning_rate=0.08, num_leaves=63, min_data_in_leaf=10, feature_fraction=0.9,
                   bagging_fraction=0.8, bagging_freq=1, lambda_l2=1.0)
PARAMS = {"gemm": BASE_PARAMS,
          "conv": {**BASE_PARAMS, "min_data_in_leaf": 20, "feature_fraction": 0.4, "lambda_l2": 5.0}}
# Boosters per model (seeds summed): bagging raised grouped-CV mean and P10 of every op (grouped CV, docs/history.md).
BAG = {"gemm": 3, "conv": 3}
POOL_CONV = True
THREADS = os.cpu_count() or 2
# reg_rel target shaping (--clip, --near-weight): 0 / 1 leave the target and the rows as they are.
TARGET_CLIP = 0.0
NEAR_WEIGHT = 1.0
# Early stopping's ceiling: with ~3,000 conv problems the pooled model still improved at 1,500 rounds.
MAX_ROUNDS = 4000
# Early stopping's patience (rounds without a better inner-split loss). GEMM: with the 955-problem data
# (gemm_train_more) 60 stopped at 410 rounds and lost 1 point of held-out mean and 4 of P10 against 300
# (1,902 rounds; bench/results/2026-11-22-h200x4-gemm-more/). Conv stops near 2,200 rounds with 60.
PATIENCE = {"gemm": 300, "conv": 60}
PATIENCE_OVERRIDE: int | None = None  # --patience: one value for every op trained
NEAR_EFF = 0.8  # rows at least this efficient (oracle / time) get NEAR_WEIGHT
PARAM_OVERRIDES: dict = {}  # --param KEY=VALUE: LightGBM settings over PARAMS, for every op trained
# lambdarank's inner-split metric: NDCG at these cutoffs, early stopping when any stalls (--rank-stop-at K: only @K)
RANK_EVAL_AT = DEFAULT_RANK_EVAL_AT = (1, 5)
FIXED_ROUNDS: int | None = None  # --rounds N: every booster (CV and final) fits N rounds, no early stopping


def dtype_family(problem: str) -> str:
    """The selector's dtype family (half, tf32, fp8), from the C++ rule that keys the models."""
    from tilepick import _core

    return _core.dtype_family(problem)


def shape_of(problem: str) -> str:
    """The canonical problem without its dtype token: a shape swept in bf16 and in f16 is one shape."""
    token = rec.dtype_token(problem)
    return " ".join(t for t in rec.problem_key(problem).split() if t != token)


def cv_group(problem: str, tag: str | None) -> str:
    """Whole networks stay together; synthetic and untagged shapes are their own family (all dtypes)."""
    if tag and not tag.startswith("synth"):
        return tag.split(".")[0]
    return "shape:" + shape_of(problem)


def load_rows(paths: list[str], problem_files: list[str], remeasured: list[str] = ()) -> tuple[dict, pd.DataFrame]:
    header, df = rec.read_records(list(remeasured) + list(paths))
    df = df[(~df["is_vendor"]) & (~df["config"].str.startswith("fault="))]
    # a problem re-measured (another timing method: data/sweeps/h200-graph/) keeps only those records, so one
    # problem's labels never mix two methods
    if remeasured:
        again = df["source"].isin(remeasured)
        df = df[again | ~df["problem"].isin(set(df.loc[again, "problem"]))]
    # a pair measured in two files (a re-run, an active-sampling file) counts once: the first file's
    df = df.drop_duplicates(["problem", "config"], keep="first")
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


def keep_share(problems: pd.Series, share: float) -> np.ndarray:
    """A stable choice of about `share` of the problems; a shape's dtypes are kept or dropped together."""
    if share >= 1:
        return np.ones(len(problems), dtype=bool)
    shape = problems.map(shape_of)
    h = {s: zlib.crc32(s.encode()) % 10000 for s in shape.unique()}
    return (shape.map(h) < share * 10000).to_numpy()


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


def params_for(objective: str, seed: int, op: str = "gemm") -> dict:
    base = dict(PARAMS["gemm" if op == "gemm" else "conv"], **PARAM_OVERRIDES, seed=seed, deterministic=True,
                force_row_wise=True, num_threads=THREADS, verbose=-1)
    if objective == "lambdarank":
        base.update(objective="lambdarank", metric="ndcg", eval_at=list(RANK_EVAL_AT), lambdarank_truncation_level=40,
                    label_gain=[float(i) for i in range(31)])
    else:
        base.update(objective="regression", metric="l2")
    return base


def target(df: pd.DataFrame, objective: str) -> np.ndarray:
    y = {"reg_tflops": df["y_tflops"], "reg_rel": df["y_rel"], "lambdarank": df["y_rank"]}[objective].to_numpy()
    # Clipped: every config slower than exp(TARGET_CLIP) x the problem's best looks the same, so the
    # trees spend their splits on telling the near-best apart.
    return np.minimum(y, TARGET_CLIP) if objective == "reg_rel" and TARGET_CLIP > 0 else y


def weights(df: pd.DataFrame, objective: str) -> np.ndarray | None:
    if objective != "reg_rel" or NEAR_WEIGHT == 1.0:
        return None
    return np.where(df["eff"].to_numpy() >= NEAR_EFF, NEAR_WEIGHT, 1.0)


def score_sign(objective: str) -> float:
    """Predictions -> 'higher is better' scores."""
    return -1.0 if objective == "reg_rel" else 1.0


def dataset(X, df, objective, lgb, ref=None):
    kw = {}
    if objective == "lambdarank":
        kw["group"] = df.groupby("problem", sort=False).size().to_numpy()
    from tilepick import _core

    return lgb.Dataset(X, label=target(df, objective), weight=weights(df, objective), reference=ref,
                       free_raw_data=False, feature_name=list(_core.feature_names()), **kw)


def patience_for(op: str) -> int:
    return PATIENCE_OVERRIDE or PATIENCE["gemm" if op == "gemm" else "conv"]


def fit(X, df, objective, seed, rounds=None, init_model=None):
    """Early stopping on an inner split (10% of the groups) unless `rounds` is fixed."""
    import lightgbm as lgb

    params = params_for(objective, seed, df["op"].iloc[0])
    rounds = rounds if rounds is not None else FIXED_ROUNDS
    if rounds is not None:
        return lgb.train(params, dataset(X, df, objective, lgb), num_boost_round=rounds, init_model=init_model)
    groups = df["group"].unique()
    rng = np.random.default_rng(seed)
    inner = set(rng.choice(groups, size=max(1, len(groups) // 10), replace=False))
    tr = ~df["group"].isin(inner).to_numpy()
    dtr = dataset(X[tr], df[tr], objective, lgb)
    dva = dataset(X[~tr], df[~tr], objective, lgb, ref=dtr)
    return lgb.train(params, dtr, num_boost_round=MAX_ROUNDS, valid_sets=[dva], init_model=init_model,
                     callbacks=[lgb.early_stopping(patience_for(df["op"].iloc[0]), verbose=False)])


def efficiency(df: pd.DataFrame, score: np.ndarray, oracle: pd.Series | None = None) -> pd.DataFrame:
    """Per problem: efficiency of the argmax-score config (ties broken by config string), against `oracle`
    (problem -> best time; default: the fastest row of df, for rows that hold every measured config)."""
    d = df.assign(score=score)
    d = d.sort_values(["problem", "score", "config"], ascending=[True, False, True])
    top = d.groupby("problem", sort=False).head(1).set_index("problem")
    if oracle is None:
        oracle = df.groupby("problem")["median_us"].min()
    oracle = oracle.reindex(top.index)
    out = pd.DataFrame({"eff": oracle / top["median_us"]})
    # top-5: the oracle is among the five best-scored configs (within `tilepick eval`'s tie band)
    from tilepick import _core

    top5 = d.groupby("problem", sort=False).head(5).groupby("problem")["median_us"].min()
    out["top1"] = out["eff"] >= 1 / (1 + _core.tie_band)
    out["top5"] = (oracle / top5) >= 1 / (1 + _core.tie_band)
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


# What a CV worker fits on: (X, df, folds), set in the process that runs _cv_fit.
_CV_DATA: tuple | None = None


# The settings main() sets from its options: a spawned CV worker starts from the module's defaults.
_SETTINGS = ("THREADS", "TARGET_CLIP", "NEAR_WEIGHT", "PARAM_OVERRIDES", "PATIENCE_OVERRIDE", "RANK_EVAL_AT",
             "FIXED_ROUNDS")


def _cv_init(x_path: str, df_path: str, settings: dict) -> None:
    """A spawned CV worker: the rows from the files cross_validate_all wrote, the parent's settings."""
    global _CV_DATA
    globals().update(settings)
    df = pd.read_pickle(df_path)
    _CV_DATA = (np.load(x_path, mmap_mode="r"), df, fold_of(df["group"]))


def _cv_fit(task: tuple) -> tuple:
    """One booster of grouped CV: (objective, fold, bag index, seed) -> (task, early-stopping round, the
    held-out fold's scores, higher is better)."""
    objective, f, b, seed = task
    X, df, folds = _CV_DATA
    te = folds == f
    model = fit(np.asarray(X[~te]), df[~te], objective, seed + b)
    it = model.best_iteration or model.current_iteration()
    return task, it, score_sign(objective) * model.predict(np.asarray(X[te]), num_iteration=model.best_iteration or None)


def cross_validate_all(X, df, objectives, seed, bag=1, jobs=1) -> dict:
    """Grouped CV of each objective on the same folds, a bag of `bag` boosters each (seeds seed, seed+1, ...),
    their summed scores picking: {objective: ({op: summary} over the out-of-fold choices, the median
    early-stopping round)}. jobs > 1 fits that many boosters at once in spawned processes (THREADS // jobs
    threads each; LightGBM's OpenMP is not fork-safe), with the same folds and seeds."""
    global _CV_DATA
    folds = fold_of(df["group"])
    used = [f for f in range(FOLDS) if (folds == f).any() and not (folds == f).all()]
    tasks = [(o, f, b, seed) for o in objectives for f in used for b in range(bag)]
    if jobs > 1 and len(tasks) > 1:
        import multiprocessing as mp
        import tempfile

        with tempfile.TemporaryDirectory(prefix="tilepick-cv-") as tmp:
            np.save(f"{tmp}/X.npy", np.ascontiguousarray(X))
            df.to_pickle(f"{tmp}/df.pkl")
            settings = {k: globals()[k] for k in _SETTINGS} | {"THREADS": max(1, THREADS // jobs)}
            init = (f"{tmp}/X.npy", f"{tmp}/df.pkl", settings)
            with mp.get_context("spawn").Pool(min(jobs, len(tasks)), _cv_init, init) as pool:
                results = pool.map(_cv_fit, tasks, chunksize=1)
    else:
        _CV_DATA = (X, df, folds)
        try:
            results = [_cv_fit(t) for t in tasks]
        finally:
            _CV_DATA = None
    by_task = {task: (it, s) for task, it, s in results}
    out = {}
    for o in objectives:
        parts, iters = [], []
        for f in used:
            te = folds == f
            s = np.zeros(int(te.sum()))
            for b in range(bag):
                it, scores = by_task[(o, f, b, seed)]
                iters.append(it)
                s += scores
            parts.append(efficiency(df[te], s).assign(op=df.loc[te].groupby("problem")["op"].first()))
        e = pd.concat(parts)
        out[o] = ({op: summarize(g) for op, g in e.groupby("op")}, int(np.median(iters)) if iters else 100)
    return out


def cross_validate(X, df, objective, seed, bag=1):
    """cross_validate_all of one objective: ({op: summary}, the median early-stopping round)."""
    return cross_validate_all(X, df, [objective], seed, bag)[objective]


def merge_models(texts: list[str]) -> str:
    """One LightGBM text model whose raw score is the sum of `texts`' scores: their trees in one list
    (no tree_sizes line: LightGBM and the C++ evaluator then parse the trees sequentially)."""
    head = texts[0][:texts[0].index("\nTree=")]
    tail = texts[0][texts[0].index("end of trees"):]
    trees = []
    for t in texts:
        trees += t[t.index("\nTree=") + 1:t.index("end of trees")].split("Tree=")[1:]
    head = "\n".join(l for l in head.split("\n") if not l.startswith("tree_sizes="))
    body = "".join(f"Tree={i}" + tree[tree.index("\n"):] for i, tree in enumerate(trees))
    return head + "\n\n" + body + tail


def negate_leaves(text: str) -> str:
    """A model whose predictions are the negation of `text`'s (exact in floating point)."""
    def neg(line: str) -> str:
        key, vals = line.split("=", 1)
        return key + "=" + " ".join(v[1:] if v.startswith("-") else "-" + v for v in vals.split())
    # tree_sizes holds byte counts of the tree blocks, which the signs change: LightGBM and the C++
    # evaluator parse the trees sequentially without it.
    return "\n".join(neg(l) if l.startswith("leaf_value=") else l for l in text.split("\n")
                     if not l.startswith("tree_sizes="))


# Per-node training statistics that prediction never reads: LightGBM loads a tree without them and the
# C++ evaluator skips them. Written models leave them out (40% smaller, the same predictions), and the
# tree_sizes line, whose byte counts that changes (LightGBM then parses the trees sequentially).
TRAINING_ONLY_KEYS = ("split_gain=", "leaf_weight=", "leaf_count=", "internal_value=", "internal_weight=",
                      "internal_count=", "tree_sizes=")


def prediction_text(text: str) -> str:
    """A LightGBM text model without its TRAINING_ONLY_KEYS lines."""
    return "\n".join(line for line in text.split("\n") if not line.startswith(TRAINING_ONLY_KEYS))


def fnv_hex16(data: bytes) -> str:
    """FNV-1a 64 in hex: core/hash.hpp's, through the extension (model versions, feature_spec "model_text_fnv")."""
    from tilepick import _core

    return _core.fnv_hex16(data)


def text_fnv(text: str) -> str:
    """feature_spec "model_text_fnv" of a model text: the hash of what write_text_gz stores, which the
    loader checks against the file it reads."""
    return fnv_hex16(prediction_text(text).encode())


def write_text_gz(path: Path, text: str) -> None:
    """A model text (its prediction_text) gzipped reproducibly (no timestamp in the header)."""
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(prediction_text(text).encode())


def heldout_summary(folder: Path, vdf: pd.DataFrame, vX: np.ndarray) -> dict:
    """A model folder's choice among each held-out problem's measured configs, summarized (a manifest's
    "validation")."""
    from tilepick import _core

    return summarize(efficiency(vdf, _core.gbdt_predict(str(model_file(folder)), vX)))


def model_file(folder: Path) -> Path:
    """A model folder's teacher file, by the C++ loader's rule (feature_spec "model_file", relative to
    the folder, which the conv directions of a pooled model share; else model.txt.gz, else model.txt)."""
    from tilepick import _core

    return Path(_core.model_file(str(folder)))


def read_model_text(folder: Path) -> str:
    path = model_file(folder)
    return gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()


def git_commit() -> str:
    """The source commit: a `.commit` file at the tree's root wins (the device tool's copy of the tree
    carries a stale .git; CMake reads the same file), else git."""
    stamp = Path(__file__).resolve().parents[2] / ".commit"
    if stamp.is_file() and stamp.read_text().strip():
        return stamp.read_text().strip()
    try:
        return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, check=True).stdout.strip()
    except Exception:  # noqa: BLE001 - a copied tree without git
        return "unknown"


def split_name(name: str, arch: str) -> tuple[str, str]:
    """A model folder name `<op>_<dtype family>_<arch>` -> (op, family); the arch may hold '_' (h100_sxm)."""
    if not name.endswith("_" + arch):
        raise ValueError(f"model name '{name}' does not end with its arch '_{arch}'")
    op, family = name[: -len(arch) - 1].rsplit("_", 1)
    return op, family


def check_arch(ap, header: dict, arch: str) -> None:
    """The features describe --arch's device: records measured on another arch are refused."""
    device = header.get("devices", [{}])[0]
    # as `tilepick eval` reads it (header_arch in tools/cmd_eval.cpp): the sweep's arch, else the device's
    measured = header.get("options", {}).get("arch") or device.get("arch")
    if measured and measured != arch:
        ap.error(f"the records were measured on '{measured}' ({device.get('name', '')}), but --arch is "
                 f"'{arch}': the features must describe the device that was measured")


def train_group(names, df, X, args, header, out_dir, val=None):
    """Trains one model on `df` (the rows of every op in `names`) and writes it as each name's folder."""
    from tilepick import _core

    ops = [split_name(n, args.arch)[0] for n in names]
    bag = args.bag or BAG["gemm" if ops[0] == "gemm" else "conv"]
    results = cross_validate_all(X, df, args.objectives, args.seed, bag, args.jobs)
    cv = {o: r[0] for o, r in results.items()}
    best_iter = {o: r[1] for o, r in results.items()}
    for obj in args.objectives:
        for op in ops:
            c = cv[obj][op]
            print(f"  {op} {obj:<10} CV mean {c['mean']:.4f} p10 {c['p10']:.4f} min {c['min']:.4f} "
                  f"top1 {c['top1']:.3f} ({best_iter[obj]} rounds)", flush=True)
    best = max(args.objectives, key=lambda o: (round(np.mean([cv[o][op]["mean"] for op in ops]), 4),
                                               np.mean([cv[o][op]["p10"] for op in ops])))
    if args.compare_only:
        return record_comparison(names, ops, cv, best_iter, best, bag, args, out_dir)
    init = None
    if args.warm_start and (Path(args.warm_start) / names[0] / "feature_spec.json").exists():
        init = str(out_dir / f".warm_start_{names[0]}.txt")
        out_dir.mkdir(parents=True, exist_ok=True)
        Path(init).write_text(read_model_text(Path(args.warm_start) / names[0]))
    rounds = FIXED_ROUNDS or max(20, int(best_iter[best] * 1.1))
    text = merge_models([fit(X, df, best, args.seed + b, rounds=rounds, init_model=init).model_to_string()
                         for b in range(bag)])
    if score_sign(best) < 0:
        text = negate_leaves(text)
    manifests = {}
    # One file for a pooled model, named by each direction's feature_spec "model_file".
    family, arch = split_name(names[0], args.arch)[1], args.arch
    shared = f"conv_{family}_{arch}.model.txt.gz" if len(names) > 1 else None
    for name in names:
        (out_dir / name).mkdir(parents=True, exist_ok=True)
        (out_dir / name / "model.txt.gz").unlink(missing_ok=True)
    for path in [out_dir / shared] if shared else [out_dir / n / "model.txt.gz" for n in names]:
        write_text_gz(path, text)
    for name, op in zip(names, ops):
        folder = out_dir / name
        spec = {"feature_names": list(_core.feature_names()), "schema_hash": _core.feature_schema_hash(),
                "feature_version": int(_core.feature_version()), "space_hash": _core.config_space_hash(op),
                "spaces": list(_core.config_spaces(op)), "op": op, "dtype_family": family, "arch": arch,
                "objective": best, "score": "higher_is_better", "model_text_fnv": text_fnv(text)}
        if shared:
            spec["model_file"] = "../" + shared
        kept_vendor_choice = keep_deployment(folder, spec)
        (folder / "feature_spec.json").write_text(json.dumps(spec, indent=1) + "\n")
        mine = df[df["op"] == op]
        manifest = {
            "data": [{"file": p, "rows": int(n)} for p, n in mine.groupby("source").size().items()],
            "rows": int(len(mine)), "problems": int(mine["problem"].nunique()), "groups": int(mine["group"].nunique()),
            "trained_with": {o: int((df["op"] == o).sum()) for o in ops} if len(ops) > 1 else None,
            "objective": best, "rounds": rounds, "bag": bag, "trees": text.count("\nTree="),
            "params": params_for(best, args.seed, op), "cv": {o: cv[o][op] for o in args.objectives},
            "target_clip": TARGET_CLIP, "near_weight": NEAR_WEIGHT, "problem_fraction": args.problem_fraction,
            "patience": patience_for(op), "fixed_rounds": FIXED_ROUNDS,
            "device": header.get("devices", [{}])[0].get("name", ""), "commit": git_commit(),
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "warm_start": init is not None,
        }
        if kept_vendor_choice is not None:
            manifest["vendor_choice"] = kept_vendor_choice
        v = val.get(op) if val else None
        if v is not None and len(v[0]):
            vdf, vX = v
            manifest["validation"] = heldout_summary(folder, vdf, vX)
            manifest["validation_files"] = sorted(vdf["source"].unique().tolist())
            print(f"  {name} held-out networks: {json.dumps(manifest['validation'])}", flush=True)
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str) + "\n")
        manifests[name] = manifest
    if init:
        os.unlink(init)
    return manifests


def record_comparison(names, ops, cv, rounds, best, bag, args, out_dir: Path) -> dict:
    """--compare-only: the objectives' grouped-CV numbers written into the existing models' manifests ("cv", and
    "cv_compared": how they were compared and which won), their boosters untouched."""
    manifests = {}
    for name, op in zip(names, ops):
        path = out_dir / name / "manifest.json"
        if not path.exists():
            raise SystemExit(f"--compare-only: {path} does not exist (train the model first)")
        manifest = json.loads(path.read_text())
        manifest["cv"] = {o: cv[o][op] for o in args.objectives}
        manifest["cv_compared"] = {
            "objectives": list(args.objectives), "best": best, "model_objective": manifest.get("objective"),
            "folds": FOLDS, "bag": bag, "seed": args.seed, "patience": patience_for(op), "rounds": rounds,
            "fixed_rounds": FIXED_ROUNDS, "rank_eval_at": list(RANK_EVAL_AT),
            "param_overrides": PARAM_OVERRIDES, "jobs": args.jobs, "threads": THREADS, "commit": git_commit(),
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        if best != manifest.get("objective"):
            print(f"  warning: {name} was trained with {manifest.get('objective')}, but {best} won the comparison",
                  flush=True)
        path.write_text(json.dumps(manifest, indent=1, default=str) + "\n")
        manifests[name] = manifest
    return manifests


# feature_spec.json entries set by other tools that a retrained booster keeps: the arch specs it serves, the
# vendor-choice model (trained on its own targets) and vendor_first. The manifest's held-out numbers ("eval",
# "serves_eval", "vendor_vs_model") measured the old booster's picks and are dropped: stamp the new ones.
KEPT_SPEC_KEYS = ("serves", "vendor_choice", "vendor_first")


def keep_deployment(folder: Path, spec: dict) -> dict | None:
    """Copies KEPT_SPEC_KEYS from the folder's existing feature_spec.json into `spec`; returns the old manifest's
    "vendor_choice" record when the vendor choice is kept, for the new manifest."""
    spec_path, manifest_path = folder / "feature_spec.json", folder / "manifest.json"
    if not spec_path.exists():
        return None
    old = json.loads(spec_path.read_text())
    names = [k for k in KEPT_SPEC_KEYS if k in old]
    for k in names:
        spec[k] = old[k]
    old_manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    dropped = [k for k in ("eval", "serves_eval", "vendor_vs_model") if k in old_manifest]
    if names or dropped:
        print(f"  {folder.name}: kept {', '.join(names) or 'nothing'} of feature_spec.json; dropped the held-out "
              f"numbers {', '.join(dropped) or '(none)'} (re-run tilepick eval and --stamp-eval)", flush=True)
    return old_manifest.get("vendor_choice") if "vendor_choice" in names else None


def stamp_eval(models_dir: Path, eval_json: str) -> None:
    """Copies each model's held-out numbers from `tilepick eval --out` (eval.json) into its manifest
    "eval", the floor that ctest shipped_models_eval holds the shipped models to. Records of another
    device than the model's arch (one its feature_spec.json "serves") go to "serves_eval"[arch]."""
    report = json.loads(Path(eval_json).read_text())
    groups = {g["name"]: g["model"] for g in report["groups"]}
    csv = Path(eval_json).with_name("eval.csv")
    vendors = vendor_comparison(csv) if csv.exists() else {}
    for manifest_path in sorted(models_dir.glob("*/manifest.json")):
        g = groups.get("source=model:" + manifest_path.parent.name)
        if g is None:
            continue
        manifest = json.loads(manifest_path.read_text())
        spec = json.loads((manifest_path.parent / "feature_spec.json").read_text())
        numbers = {k: round(g[k], 6) for k in ("mean", "p10", "min")}
        vendor = vendors.get("model:" + manifest_path.parent.name)
        if vendor:  # the evidence for (or against) feature_spec "vendor_first", per device
            manifest.setdefault("vendor_vs_model", {})[report["arch"]] = {**vendor, "records": report["records"]}
        if report["arch"] == spec["arch"]:
            manifest["eval"], manifest["eval_records"] = numbers, report["records"]
        else:
            manifest.setdefault("serves_eval", {})[report["arch"]] = {**numbers, "records": report["records"]}
        manifest_path.write_text(json.dumps(manifest, indent=1, default=str) + "\n")
        print(f"{manifest_path}: eval on {report['arch']} {numbers}")


def timed_beside_vendor(eval_csv: Path) -> pd.DataFrame:
    """The rows of `tilepick eval --out`'s eval.csv where both the model's whole-pool first choice and the vendor's
    heuristic choice ran (own_first_us, vendor_heur_us)."""
    df = pd.read_csv(eval_csv)
    return df[(df["own_first_measured"] == 1) & (df["own_first_us"] > 0) & (df["vendor_heur_us"] > 0)]


def vendor_comparison(eval_csv: Path) -> dict[str, dict]:
    """Per model source of `tilepick eval --out` (eval.csv): over the problems where both the model's whole-pool
    first choice and the vendor's heuristic choice were timed, how much faster the vendor's is (geomean of
    model time / vendor time) and on what share of the problems it is faster."""
    both = timed_beside_vendor(eval_csv)
    out = {}
    for source, g in both.groupby("source"):
        ratio = g["own_first_us"] / g["vendor_heur_us"]
        out[source] = {"problems": int(len(g)), "vendor_speedup_geomean": round(float(np.exp(np.log(ratio).mean())), 4),
                       "vendor_faster_share": round(float((ratio > 1).mean()), 4)}
    return out


def set_vendor_first(models_dir: Path, value: bool, only: list[str]) -> None:
    """Writes feature_spec.json "vendor_first" of the model folders in `only`: dispatch's heuristic strategy (vendor
    auto) then runs the vendor library's first choice instead of the model's (docs/dispatch.md)."""
    if not only:
        raise ValueError("--vendor-first: name the model folders with --only")
    for name in only:
        path = models_dir / name / "feature_spec.json"
        if not path.exists():
            raise ValueError(f"--vendor-first: {path} does not exist")
        spec = json.loads(path.read_text())
        if value:
            spec["vendor_first"] = True
        else:
            spec.pop("vendor_first", None)
        path.write_text(json.dumps(spec, indent=1) + "\n")
        print(f"{path}: vendor_first {value}")


def add_serves(models_dir: Path, archs: list[str], only: list[str]) -> None:
    """Adds arch spec names to each model folder's feature_spec.json "serves" (the selector then uses the model for
    those devices too), before measuring the model there; `--stamp-eval` of that eval then records its floors."""
    from tilepick import _core

    known = set(_core.arch_names())
    for arch in archs:
        if arch not in known:
            raise ValueError(f"--add-serves: '{arch}' is not an arch spec ({', '.join(sorted(known))})")
    for spec_path in sorted(models_dir.glob("*/feature_spec.json")):
        if only and spec_path.parent.name not in only:
            continue
        spec = json.loads(spec_path.read_text())
        serves = list(dict.fromkeys(spec.get("serves", []) + [a for a in archs if a != spec["arch"]]))
        if serves:
            spec["serves"] = serves
        spec_path.write_text(json.dumps(spec, indent=1) + "\n")
        print(f"{spec_path}: serves {serves}")


def parse_param(text: str) -> tuple[str, float | int]:
    """KEY=VALUE of --param: a PARAMS key and a number."""
    key, sep, value = text.partition("=")
    known = set(BASE_PARAMS) | set(PARAMS["conv"])
    if not sep or key not in known:
        raise argparse.ArgumentTypeError(f"'{text}': expected KEY=NUMBER with KEY one of {sorted(known)}")
    try:
        return key, int(value) if value.strip().lstrip("-").isdigit() else float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': '{value}' is not a number") from None


def main(argv=None) -> int:
    global THREADS, TARGET_CLIP, NEAR_WEIGHT, PARAM_OVERRIDES, PATIENCE_OVERRIDE, RANK_EVAL_AT, FIXED_ROUNDS
    ap = argparse.ArgumentParser(prog="python -m tilepick.train", description=__doc__.split("\n")[0])
    ap.add_argument("records", nargs="*", help="training record files (.csv.gz)")
    ap.add_argument("--remeasured", nargs="*", default=[],
                    help="record files that re-measure training problems (e.g. with CUDA-graph timing); a problem "
                         "found in them keeps only their records")
    ap.add_argument("--val", nargs="*", default=[], help="held-out record files (whole networks absent from training)")
    ap.add_argument("--problems-file", nargs="*", default=[], help="problem files with name: tags (network groups)")
    ap.add_argument("--out", default="models", help="models directory")
    ap.add_argument("--arch", default="h200", help="arch spec the features use (data/arch)")
    ap.add_argument("--objectives", nargs="+", default=list(DEFAULT_OBJECTIVES), choices=OBJECTIVES)
    ap.add_argument("--only", nargs="*", default=[], help="train only these model names (e.g. gemm_f16_h200)")
    ap.add_argument("--compare-only", action="store_true",
                    help="only compare the --objectives by grouped CV and write their numbers into the existing "
                         "models' manifest.json in --out (\"cv\", \"cv_compared\"), without training a booster")
    ap.add_argument("--jobs", type=int, default=1,
                    help="boosters fitted at once during cross-validation (processes; --threads split between them)")
    ap.add_argument("--warm-start", help="models directory whose models continue training")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--bag", type=int, help="boosters per model (seeds seed, seed+1, ...), scores summed; default BAG")
    ap.add_argument("--stamp-eval", metavar="EVAL_JSON",
                    help="only copy the held-out numbers of `tilepick eval --out` into the manifests in --out")
    ap.add_argument("--add-serves", nargs="+", metavar="ARCH",
                    help="only add these arch specs to the \"serves\" of the model folders in --out (--only: some)")
    ap.add_argument("--vendor-first", choices=["on", "off"],
                    help="only set (on) or clear (off) feature_spec.json \"vendor_first\" of the model folders named by "
                         "--only in --out: dispatch's heuristic strategy then runs the vendor's first choice (set it where "
                         "the manifest's \"vendor_vs_model\", written by --stamp-eval, shows the vendor faster)")
    ap.add_argument("--pool-conv", action=argparse.BooleanOptionalAction, default=POOL_CONV,
                    help="one model for the conv directions of a dtype family (the op is a feature), written to each")
    ap.add_argument("--threads", type=int, default=0, help="LightGBM threads (0: all cores)")
    ap.add_argument("--clip", type=float, default=TARGET_CLIP,
                    help="reg_rel: clip the target log(time / best) at this (0: off)")
    ap.add_argument("--problem-fraction", type=float, default=1.0,
                    help="train on this share of the training problems (a stable hash of the problem without its "
                         "dtype picks them; for learning curves)")
    ap.add_argument("--near-weight", type=float, default=NEAR_WEIGHT,
                    help=f"reg_rel: weight of rows within {NEAR_EFF} efficiency of the problem's best")
    ap.add_argument("--patience", type=int, help="early stopping's patience in rounds for every op; default PATIENCE "
                                                  f"({PATIENCE})")
    ap.add_argument("--rank-stop-at", type=int, metavar="K",
                    help="lambdarank: early stopping watches the inner split's NDCG@K only (default: NDCG@1 and @5, "
                         "stopping when either stalls)")
    ap.add_argument("--rounds", type=int, metavar="N",
                    help="every booster (cross-validation and final) fits N rounds, without early stopping")
    ap.add_argument("--param", type=parse_param, action="append", default=[], metavar="KEY=VALUE",
                    help="LightGBM setting over the per-op PARAMS (e.g. num_leaves=63), for hyperparameter studies")
    args = ap.parse_args(argv)
    THREADS = args.threads or THREADS
    PARAM_OVERRIDES = dict(args.param)
    TARGET_CLIP, NEAR_WEIGHT = args.clip, args.near_weight
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, not {args.jobs}")
    if args.patience is not None and args.patience < 1:
        ap.error(f"--patience must be at least 1, not {args.patience}")
    PATIENCE_OVERRIDE = args.patience
    for flag, value in (("--rank-stop-at", args.rank_stop_at), ("--rounds", args.rounds)):
        if value is not None and value < 1:
            ap.error(f"{flag} must be at least 1, not {value}")
    RANK_EVAL_AT = (args.rank_stop_at,) if args.rank_stop_at else DEFAULT_RANK_EVAL_AT
    FIXED_ROUNDS = args.rounds
    if args.stamp_eval:
        stamp_eval(Path(args.out), args.stamp_eval)
        return 0
    if args.add_serves:
        add_serves(Path(args.out), args.add_serves, args.only)
        return 0
    if args.vendor_first:
        try:
            set_vendor_first(Path(args.out), args.vendor_first == "on", args.only)
        except ValueError as e:
            ap.error(str(e))
        return 0
    if not args.records:
        ap.error("no training record files")

    header, raw = load_rows(args.records, args.problems_file, args.remeasured)
    check_arch(ap, header, args.arch)
    if not 0 < args.problem_fraction <= 1:
        ap.error(f"--problem-fraction must be in (0, 1], not {args.problem_fraction}")
    raw = raw[keep_share(raw["problem"], args.problem_fraction)]
    df = add_targets(raw)
    vdf_all = None
    if args.val:
        vheader, vraw = load_rows(args.val, args.problems_file)
        check_arch(ap, vheader, args.arch)
        vdf_all = add_targets(vraw)
    out_dir = Path(args.out)
    names = sorted({f"{o}_{f}_{args.arch}" for o, f in zip(df["op"], df["family"])})
    names = [n for n in names if not args.only or n in args.only]
    # Units of training: the conv directions of one family share a model when --pool-conv.
    units: dict[str, list[str]] = {}
    for name in names:
        op, family = split_name(name, args.arch)
        key = f"conv_{family}" if args.pool_conv and op.startswith("conv_") else name
        units.setdefault(key, []).append(name)
    for unit in units.values():
        ops = [split_name(n, args.arch)[0] for n in unit]
        family = split_name(unit[0], args.arch)[1]
        part = df[df["op"].isin(ops) & (df["family"] == family)].reset_index(drop=True)
        if len(ops) > 1:  # a synthetic shape's directions stay in one fold
            part["group"] = ["shape:" + g.split(" ", 1)[1] if g.startswith("shape:") else g for g in part["group"]]
        print(f"{' + '.join(unit)}: {len(part)} rows, {part['problem'].nunique()} problems, "
              f"{part['group'].nunique()} groups", flush=True)
        X = compute_features(part, args.arch)
        val = {}
        if vdf_all is not None:
            for op in ops:
                v = vdf_all[(vdf_all["op"] == op) & (vdf_all["family"] == family)].reset_index(drop=True)
                val[op] = (v, compute_features(v, args.arch) if len(v) else None)
        train_group(unit, part, X, args, header, out_dir, val)
    return 0


if __name__ == "__main__":
    sys.exit(main())
