#!/usr/bin/env python3
"""Probes of what could lift first-choice quality, on the committed records (CPU only, issue 5).

  PYTHONPATH=python python3 experiments/2026-11-22-selection-probes/selection_probes.py registers [--rounds 800] [--seeds 1 2 3]
  PYTHONPATH=python python3 experiments/2026-11-22-selection-probes/selection_probes.py rerank [--near 0.7] [--objective reg|rank]
  PYTHONPATH=python python3 experiments/2026-11-22-selection-probes/selection_probes.py analytic [--op conv|gemm] [--context] [--rounds 800] [--seeds 1 2]
  PYTHONPATH=python python3 experiments/2026-11-22-selection-probes/selection_probes.py pairwise [--top 10] [--rounds 600]
  PYTHONPATH=python python3 experiments/2026-11-22-selection-probes/selection_probes.py gemm-more [--rounds 500]
  PYTHONPATH=python python3 experiments/2026-11-22-selection-probes/selection_probes.py knn [--k 10 30 100] [--lam 0.1 0.25 0.5 1]
  PYTHONPATH=python python3 experiments/2026-11-22-selection-probes/selection_probes.py objective-cv [--rounds 600]
  PYTHONPATH=python python3 experiments/2026-11-22-selection-probes/selection_probes.py objective-heldout [--rounds 600]
  PYTHONPATH=python python3 experiments/2026-11-22-selection-probes/selection_probes.py teacher-bags
  PYTHONPATH=python python3 experiments/2026-11-22-selection-probes/selection_probes.py rank-labels [--rounds 600] [--variants base p8 ...]

registers: a conv model with the compiled kernels' real register count (the records' `registers`), the
  occupancy and wave efficiency it implies, and spills as five more features, against the same model
  without them (same rows, rounds and seeds), scored on both conv held-out sets: the choice among the
  measured configs, and the re-ranking of the shipped selector's first 4 (all measured).
rerank: a second model trained only on the near-best rows of every training problem (efficiency >= --near),
  re-ranking the shipped selector's first 4 on the held-out sets, alone and added to its score.
analytic: a conv model with the analytic fallback's estimate (src/select/heuristic.cpp: the main loop against
  the load latency its stages hide, the serial split-K chain) as two more features, its log2 TFLOP/s and its
  log2 ratio to the best estimate over the problem's whole legal pool, against the same model without them.
pairwise: a model of which of two configs of a conv problem is faster (log time ratio from the problem's columns
  and both configs'), trained on the ordered pairs of each training problem's fastest --top rows, re-ranking the
  shipped selector's first 4 by a round robin on the CUDA-graph held-out records.
gemm-more: grouped cross-validation on the GEMM training problems the shipped model was trained on, with
  and without gemm_train_more.csv.gz's problems in the training folds (same folds; test rows old only).
knn: a nearest-neighbour prior, what each config measured on the k training problems of the same op closest to a
  held-out problem (standardized problem feature columns; the distance-weighted mean of their ln(time / oracle)),
  alone and subtracted (times --lam) from the shipped conv model's score, choosing among the measured configs.
objective-cv: grouped CV (the trainer's folds) of a lambdarank and a reg_rel stand-in for the pooled conv teacher.
objective-heldout: the shipped conv teacher, the same two stand-ins and rank blends of the teacher with each, choosing
  among the measured configs of the conv held-out sets.
teacher-bags: the shipped conv teacher's bagged boosters (its manifest's "bag") one at a time, the first two, and all of
  them, on those sets.
rank-labels: lambdarank stand-ins for the conv teacher with other relevance grades (floor(30 eff^power)), gains,
  truncation levels, leaves or monotone constraints (RANK_VARIANTS), each on grouped CV (the trainer's folds) and on the held-out measured configs.
The models here are quick stand-ins (fixed rounds, learning rate 0.15, one booster), compared with each
other, not with the shipped models.
"""
from __future__ import annotations

import argparse
import glob
import json

import lightgbm as lgb
import numpy as np
import pandas as pd

from tilepick import _core, records as rec, train as tr

D = "data/sweeps/h200/"
CONV_HELDOUT = ["conv_val", "model_pairs_conv_val", "model_pairs_r2_conv_val", "model_pairs_r4_conv_val", "conv_val2",
                "model_pairs_r5_conv_val2"]


def params(op: str, seed: int, **kw) -> dict:
    return dict(tr.PARAMS[op], learning_rate=0.15, seed=seed, deterministic=True, force_row_wise=True, num_threads=2,
                verbose=-1, objective="regression", metric="l2", **kw)


def training_rows(model: str, extra: list[str] = ()) -> pd.DataFrame:
    files = [d["file"] for d in json.load(open(f"models/{model}/manifest.json"))["data"]] + list(extra)
    _, df = tr.load_rows(files, glob.glob("data/problems/sweep/*_train*.txt"))
    return tr.add_targets(df).reset_index(drop=True)


def heldout_rows(names: list[str]) -> pd.DataFrame:
    _, h = rec.read_records([D + n + ".csv.gz" for n in names])
    h = h[(~h["is_vendor"]) & (h["status"] == "ok")].drop_duplicates(["problem", "config"]).reset_index(drop=True)
    return h.assign(op=h["problem"].map(_core.problem_op))


def first4(h: pd.DataFrame) -> pd.DataFrame:
    """The shipped selector's first 4 (fast selection, whole pool) per held-out problem, with their measurements."""
    rows = [(p, r, c, s) for p in h["problem"].unique()
            for r, (c, s) in enumerate(_core.selector_rank(p, "h200", "models", "fast", 4))]
    t = pd.DataFrame(rows, columns=["problem", "rank", "config", "shipped"])
    return t.merge(h[["problem", "config", "median_us", "op"]], on=["problem", "config"], how="left")


def efficiency_of(h: pd.DataFrame, score: np.ndarray, oracle: pd.Series) -> pd.Series:
    return tr.efficiency(h, score, oracle)["eff"]


def line(name: str, e: pd.Series) -> str:
    return f"{name} {100 * e.mean():.2f} / {100 * e.quantile(0.1):.2f} / {100 * e.min():.1f}"


def real_register_features(df: pd.DataFrame, X: np.ndarray) -> np.ndarray:
    """Registers, CTAs per SM, occupancy and wave efficiency from the compiled register count (H200 limits,
    the rules of src/select/analysis.cpp), and spill stores."""
    n = list(_core.feature_names())
    th, smem, ctas = (X[:, n.index(k)] for k in ("threads", "smem_bytes", "ctas"))
    regs = df["registers"].to_numpy(float)
    warps = np.ceil(th / 32)
    by_regs = np.floor(np.floor(65536 / (np.ceil(regs * 32 / 256) * 256)) / warps)
    by_smem = np.where(smem > 0, np.floor(233472 / (smem + 1024)), 32)
    cps = np.maximum(np.minimum.reduce([by_regs, by_smem, np.floor(2048 / th), np.full_like(th, 32)]), 1)
    sat = np.where(df["config"].str.startswith("fam=dw").to_numpy(), 16, 8)
    per_sm = np.ceil(ctas / 132)
    j = np.minimum(per_sm, cps)
    wave_eff = ctas * np.minimum(1, j * warps / sat) / (132 * np.ceil(per_sm / cps) * j)
    return np.column_stack([regs, cps, cps * th / 2048, wave_eff, df["spills"].to_numpy(float)])


def compare_extra_columns(a, op: str, df: pd.DataFrame, h: pd.DataFrame, variants: dict, skip_base: bool = False) -> None:
    """Per seed and variant (name -> (training matrix, held-out matrix)), a quick model's choice among the measured
    configs of the held-out problems and its re-ranking of the shipped selector's first 4, per op."""
    oracle = h.groupby("problem")["median_us"].min()
    t4 = first4(h)
    for seed in a.seeds:
        for name, (A, B) in variants.items():
            if skip_base and name == "base":
                continue
            b = lgb.train(params(op, seed), lgb.Dataset(A, label=df["y_rel"].to_numpy()), num_boost_round=a.rounds)
            h["s"] = -b.predict(B)
            e = efficiency_of(h, h["s"].to_numpy(), oracle)
            r = t4.merge(h[["problem", "config", "s"]], on=["problem", "config"])
            e4 = efficiency_of(r, r["s"].to_numpy(), oracle)
            for o in sorted(h["op"].unique()):
                ps = h.loc[h["op"] == o, "problem"].unique()
                print(f"seed {seed} {name:11s} {o:16s} {line('measured choice', e.reindex(ps))}   "
                      f"{line('first 4 re-ranked', e4.reindex(ps).dropna())}", flush=True)


def probe_registers(a) -> None:
    df = training_rows("conv_fwd_half_h200")
    df = df[df["registers"] > 0].reset_index(drop=True)
    h = heldout_rows(CONV_HELDOUT)
    h = h[h["registers"] > 0].reset_index(drop=True)
    X, Xh = tr.compute_features(df, "h200"), _core.features_batch(list(h["problem"]), list(h["config"]), "h200", 0)
    compare_extra_columns(a, "conv", df, h, {"base": (X, Xh), "+registers": (
        np.hstack([X, real_register_features(df, X)]), np.hstack([Xh, real_register_features(h, Xh)]))})


def analytic_features(df: pd.DataFrame, row_only: bool, arch: str = "h200") -> np.ndarray:
    """log2 of the fallback's estimate per row, and (unless row_only: what features(problem, config, device) can
    compute from the row alone) its log2 ratio to the best estimate of the row's whole pool."""
    est, best = np.empty(len(df)), {}
    for p, idx in df.groupby("problem").indices.items():
        est[idx] = _core.heuristic_scores(p, list(df["config"].iloc[idx]), arch)
        best[p] = max(_core.heuristic_scores(p, _core.legal_configs(p, arch), arch))
    top = df["problem"].map(best).to_numpy(float)
    est = np.maximum(est, 1e-9)
    return np.column_stack([np.log2(est), np.log2(est / top)])[:, :1 if row_only else 2]


# (column, "min" or "max" over the pool): a row's value against the best of its problem's whole legal pool
CONTEXT = [("est_time_us", "min"), ("launches_est_us", "min"), ("bytes_moved_over_min", "min"), ("wave_eff", "max"),
           ("pad_eff", "max"), ("sm_fill", "max"), ("occupancy", "max"), ("tile_intensity", "max")]


def context_features(df: pd.DataFrame, X: np.ndarray, arch: str = "h200") -> np.ndarray:
    """The analytic estimate (log2, log2 ratio to the pool's best, its percentile in the pool) and the CONTEXT
    columns as log2 ratios to their best over the problem's whole legal pool."""
    names = list(_core.feature_names())
    cols = [names.index(c) for c, _ in CONTEXT]
    out = np.empty((len(df), 3 + len(CONTEXT)))
    for p, idx in df.groupby("problem").indices.items():
        pool = _core.legal_configs(p, arch)
        hp = np.sort(np.asarray(_core.heuristic_scores(p, pool, arch)))
        fp = np.asarray(_core.features_batch([p] * len(pool), pool, arch, 1))[:, cols]
        best = np.array([fp[:, j].min() if how == "min" else fp[:, j].max() for j, (_, how) in enumerate(CONTEXT)])
        est = np.maximum(np.asarray(_core.heuristic_scores(p, list(df["config"].iloc[idx]), arch)), 1e-9)
        out[idx, 0] = np.log2(est)
        out[idx, 1] = np.log2(est / max(hp[-1], 1e-9))
        out[idx, 2] = np.searchsorted(hp, est, side="right") / len(hp)
        out[idx, 3:] = np.log2(np.maximum(X[idx][:, cols], 1e-9) / np.maximum(best, 1e-9))
    return out


GEMM_HELDOUT = ["gemm_val", "gemm_val_f16", "gemm_val2", "model_pairs_gemm_val", "model_pairs_gemm_val_f16",
                "model_pairs_r2_gemm_val", "model_pairs_r2_gemm_val_f16", "model_pairs_r3_gemm_val",
                "model_pairs_r3_gemm_val_f16", "model_pairs_r6_gemm_val2"]


def probe_analytic(a) -> None:
    gemm = a.op == "gemm"
    df = training_rows("gemm_half_h200" if gemm else "conv_fwd_half_h200")
    h = heldout_rows(GEMM_HELDOUT if gemm else CONV_HELDOUT)
    X, Xh = tr.compute_features(df, "h200"), _core.features_batch(list(h["problem"]), list(h["config"]), "h200", 0)
    A, Ah = (context_features(df, X), context_features(h, Xh)) if a.context else (analytic_features(df, a.row_only), analytic_features(h, a.row_only))
    compare_extra_columns(a, a.op, df, h, {"base": (X, Xh), "+context" if a.context else "+analytic": (
        np.hstack([X, A]), np.hstack([Xh, Ah]))}, a.skip_base)


def probe_rerank(a) -> None:
    df = training_rows("conv_fwd_half_h200")
    near = df[df["eff"] >= a.near].sort_values("problem", kind="stable").reset_index(drop=True)
    X = tr.compute_features(near, "h200")
    if a.objective == "rank":
        y = np.floor(30 * near["eff"].to_numpy() ** 8).astype(int)
        p = params("conv", 3, lambdarank_truncation_level=10, eval_at=[1], label_gain=[float(i) for i in range(31)])
        p.update(objective="lambdarank", metric="ndcg")
        ds = lgb.Dataset(X, label=y, group=near.groupby("problem", sort=False).size().to_numpy())
    else:
        p, ds = params("conv", 3), lgb.Dataset(X, label=np.log(1 / near["eff"].to_numpy()))
    b = lgb.train(p, ds, num_boost_round=a.rounds)
    h = heldout_rows(CONV_HELDOUT)
    oracle = h.groupby("problem")["median_us"].min()
    t4 = first4(h)
    s = b.predict(_core.features_batch(list(t4["problem"]), list(t4["config"]), "h200", 0))
    t4["spec"] = -s if a.objective == "reg" else s
    print(f"{len(near)} near-best rows (efficiency >= {a.near}) of {near['problem'].nunique()} problems")
    for lam in (0, 0.25, 0.5, 1, 2, None):
        score = t4["spec"] if lam is None else t4["shipped"] + lam * t4["spec"]
        e = efficiency_of(t4, score.to_numpy(), oracle)
        name = "second model alone" if lam is None else f"shipped + {lam} x second"
        print(f"{name:24s}", "  ".join(line(op, e.reindex(t4.loc[t4["op"] == op, "problem"].unique()))
                                        for op in sorted(t4["op"].unique())))


def pair_rows(X: np.ndarray, first: np.ndarray, second: np.ndarray, n_head: int) -> np.ndarray:
    """A pair's row: the problem's columns once, then both configs' columns (first, second)."""
    return np.hstack([X[first], X[second][:, n_head:]])


def probe_pairwise(a) -> None:
    """A pairwise model (which of two configs of a problem is faster: log(t_first / t_second) from the problem's
    columns and both configs') re-ranks the shipped selector's first 4 by a round robin, on the CUDA-graph held-out
    records where all four are measured."""
    header, df = tr.load_rows([d["file"] for d in json.load(open("models/conv_fwd_half_h200/manifest.json"))["data"]
                               if "h200-graph" not in d["file"]], glob.glob("data/problems/sweep/*_train*.txt"),
                              ["data/sweeps/h200-graph/conv_train_short.csv.gz"])
    df = tr.add_targets(df)
    df = df.sort_values(["problem", "eff"], ascending=[True, False]).groupby("problem").head(a.top).reset_index(drop=True)
    X = tr.compute_features(df, "h200")
    n_head = _core.problem_feature_count()
    first, second = [], []
    for idx in df.groupby("problem").indices.values():
        for i in idx:
            for j in idx:
                if i != j:
                    first.append(i), second.append(j)
    first, second = np.array(first), np.array(second)
    t = df["median_us"].to_numpy()
    P = pair_rows(X, first, second, n_head)
    print(f"{df['problem'].nunique()} problems, {len(df)} rows (best {a.top} each), {len(P)} ordered pairs", flush=True)
    b = lgb.train(params("conv", 1), lgb.Dataset(P, label=np.log(t[first] / t[second])), num_boost_round=a.rounds)
    _, h = rec.read_records(["data/sweeps/h200-graph/recheck_val.csv.gz", "data/sweeps/h200-graph/newmodel_val.csv.gz"])
    h = h[(~h["is_vendor"]) & (h["status"] == "ok")].groupby(["problem", "config"], as_index=False)["median_us"].min()
    h = h.assign(op=h["problem"].map(_core.problem_op))
    h = h[h["op"].str.startswith("conv")].reset_index(drop=True)
    oracle = h.groupby("problem")["median_us"].min()
    t4 = first4(h).dropna(subset=["median_us"])
    t4 = t4[t4.groupby("problem")["config"].transform("size") == 4].reset_index(drop=True)
    Xh = _core.features_batch(list(t4["problem"]), list(t4["config"]), "h200", 0)
    pair = np.zeros(len(t4))  # round robin: sum over the other three of log(t_self / t_other), antisymmetrized
    for idx in t4.groupby("problem").indices.values():
        for i in idx:
            for j in idx:
                if i != j:
                    f = b.predict(pair_rows(Xh, np.array([i, j]), np.array([j, i]), n_head))
                    pair[i] += (f[0] - f[1]) / 2
    t4["pair"] = -pair
    print(f"{t4['problem'].nunique()} held-out problems with the shipped selector's first 4 measured")
    for lam in (0, 0.5, 1, 2, None):
        score = t4["pair"] if lam is None else t4["shipped"] + lam * t4["pair"]
        e = efficiency_of(t4, score.to_numpy(), oracle)
        name = "pairwise alone" if lam is None else f"shipped + {lam} x pairwise"
        print(f"{name:24s}", "  ".join(line(op, e.reindex(t4.loc[t4["op"] == op, "problem"].unique()))
                                        for op in sorted(t4["op"].unique())), flush=True)


def probe_gemm_more(a) -> None:
    df = training_rows("gemm_half_h200", [D + "gemm_train_more.csv.gz"])
    new = df["source"].str.contains("gemm_train_more").to_numpy()
    X = tr.compute_features(df, "h200")
    fold = tr.fold_of(df["group"])
    out = {"old problems": [], "old + gemm_train_more": []}
    for f in range(tr.FOLDS):
        test = (fold == f) & ~new
        for name, train in zip(out, ((fold != f) & ~new, fold != f)):
            b = lgb.train(params("gemm", 1), lgb.Dataset(X[train], label=df["y_rel"].to_numpy()[train]),
                          num_boost_round=a.rounds)
            out[name].append(tr.efficiency(df[test], -b.predict(X[test])))
    for name, parts in out.items():
        s = tr.summarize(pd.concat(parts))
        print(f"{name:22s} train problems {df.loc[~new if name == 'old problems' else slice(None), 'problem'].nunique()}"
              f", test {s['problems']}: mean {100 * s['mean']:.2f} P10 {100 * s['p10']:.2f} P1 {100 * s['p1']:.1f}"
              f" min {100 * s['min']:.1f} top1 {100 * s['top1']:.0f}%")


def knn_prior(df: pd.DataFrame, h: pd.DataFrame, k: int) -> np.ndarray:
    """Per held-out row: the distance-weighted mean ln(time / oracle) of its config on the k nearest training problems
    of the same op that measured it (NaN where none did)."""
    tp, hp = sorted(df["problem"].unique()), sorted(h["problem"].unique())
    P, Q = np.asarray(_core.problem_features_batch(tp, "h200")), np.asarray(_core.problem_features_batch(hp, "h200"))
    both = np.vstack([P, Q])
    keep = np.nanstd(both, 0) > 0
    mu, sd = np.nanmean(both[:, keep], 0), np.nanstd(both[:, keep], 0)
    Pz, Qz = (np.nan_to_num((M[:, keep] - mu) / sd) for M in (P, Q))
    t_op = np.array([_core.problem_op(p) for p in tp])
    y = {p: dict(zip(g["config"], g["y_rel"])) for p, g in df.groupby("problem")}
    prior, rows = np.full(len(h), np.nan), h.groupby("problem").indices
    for i, p in enumerate(hp):
        same = np.where(t_op == _core.problem_op(p))[0]
        d = np.sqrt(((Pz[same] - Qz[i]) ** 2).sum(1))
        order = np.argsort(d)[:k]
        near = [(y[tp[same[j]]], 1 / (d[j] + 0.1)) for j in order]
        for r in rows[p]:
            seen = [(t[h["config"].iat[r]], w) for t, w in near if h["config"].iat[r] in t]
            if seen:
                prior[r] = sum(v * w for v, w in seen) / sum(w for _, w in seen)
    return prior


def probe_knn(a) -> None:
    df = training_rows("conv_fwd_half_h200")
    h, Xh, teacher_file = heldout_scores()
    score = np.asarray(_core.gbdt_predict(teacher_file, Xh))
    oracle = h.groupby("problem")["median_us"].min()

    def report(name: str, s: np.ndarray) -> None:
        e = efficiency_of(h, s, oracle)
        print(f"{name:22s} " + "   ".join(f"{o} {line('', e.reindex(h.loc[h['op'] == o, 'problem'].unique()))}"
                                          for o in sorted(h["op"].unique())), flush=True)

    report("shipped model", score)
    for k in a.k:
        prior = pd.Series(knn_prior(df, h, k))
        filled = prior.fillna(prior.groupby(h["problem"]).transform("median")).fillna(0).to_numpy()
        print(f"k={k}: {np.isfinite(prior).mean():.0%} of the held-out rows have a neighbour that measured their config")
        report(f"k={k} prior alone", -filled)
        for lam in a.lam:
            report(f"k={k} model - {lam} prior", score - lam * filled)


def op_line(e: pd.DataFrame) -> str:
    """Per op mean / P10 / min of an efficiency frame with an "op" column, and the mean over all problems."""
    return " ".join(f"{op[5:]} {100 * g.eff.mean():.2f}/{100 * g.eff.quantile(.1):.1f}/{100 * g.eff.min():.0f}"
                    for op, g in e.groupby("op")) + f" all {100 * e.eff.mean():.2f}"


def conv_training_cv() -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The conv teacher's training rows (problem-sorted, as the trainer groups them), features and CV folds."""
    df = training_rows("conv_fwd_half_h200").sort_values(["problem", "config"], kind="stable").reset_index(drop=True)
    return df, tr.compute_features(df, "h200"), tr.fold_of(df["group"])


def standin_cv(df: pd.DataFrame, X: np.ndarray, folds: np.ndarray, obj: str, params: dict, rounds: int) -> str:
    """op_line of a stand-in's out-of-fold choices over the trainer's folds."""
    parts = []
    for f in range(tr.FOLDS):
        te = folds == f
        b = lgb.train(params, tr.dataset(X[~te], df[~te], obj, lgb), num_boost_round=rounds)
        e = tr.efficiency(df[te], tr.score_sign(obj) * b.predict(X[te]))
        parts.append(e.assign(op=df.loc[te].groupby("problem")["op"].first()))
    return op_line(pd.concat(parts))


def probe_objective_cv(a) -> None:
    df, X, folds = conv_training_cv()
    for obj in ("lambdarank", "reg_rel"):
        p = dict(tr.params_for(obj, 1, "conv"), learning_rate=0.15, num_threads=2)
        print(obj, a.rounds, standin_cv(df, X, folds, obj, p, a.rounds), flush=True)


def heldout_scores() -> tuple[pd.DataFrame, np.ndarray, str]:
    """The conv held-out rows, their feature matrix and the shipped conv teacher's file."""
    h = heldout_rows(CONV_HELDOUT)
    return h, np.ascontiguousarray(_core.features_batch(list(h["problem"]), list(h["config"]), "h200", 0)), \
        _core.model_file("models/conv_fwd_half_h200")


def report_measured(h: pd.DataFrame, name: str, score: np.ndarray) -> None:
    e = efficiency_of(h, score, h.groupby("problem")["median_us"].min())
    print(f"{name:26s}", "  ".join(f"{o[5:]} {line('', e.reindex(h.loc[h.op == o, 'problem'].unique()))}"
                                   for o in sorted(h.op.unique())), f"| all {100 * e.mean():.2f}", flush=True)


def probe_objective_heldout(a) -> None:
    df = training_rows("conv_fwd_half_h200").sort_values("problem", kind="stable")
    X = tr.compute_features(df, "h200")
    h, Xh, teacher_file = heldout_scores()
    teacher = np.asarray(_core.gbdt_predict(teacher_file, Xh))
    report_measured(h, "teacher", teacher)
    rank = lambda s: pd.Series(s).groupby(h["problem"].to_numpy()).rank(pct=True).to_numpy()  # per problem
    for obj in ("lambdarank", "reg_rel"):
        p = dict(tr.params_for(obj, 1, "conv"), learning_rate=0.15, num_threads=2)
        b = lgb.train(p, tr.dataset(X, df, obj, lgb), num_boost_round=a.rounds)
        s = b.predict(Xh) * tr.score_sign(obj)
        report_measured(h, f"{obj} stand-in", s)
        for w in (0.25, 0.5):
            report_measured(h, f"teacher + {w} {obj} (ranks)", (1 - w) * rank(teacher) + w * rank(s))


def probe_teacher_bags(a) -> None:
    import gzip

    h, Xh, teacher_file = heldout_scores()
    b = lgb.Booster(model_str=gzip.open(teacher_file, "rt").read())
    bags = json.load(open("models/conv_fwd_half_h200/manifest.json"))["bag"]  # boosters merged into the one file
    per = b.num_trees() // bags
    print("trees", b.num_trees(), "bags", bags)
    report_measured(h, f"{bags} bags", b.predict(Xh, raw_score=True))
    for k in range(bags if bags > 1 else 0):
        report_measured(h, f"bag {k}", b.predict(Xh, raw_score=True, start_iteration=k * per, num_iteration=per))
    if bags > 2:
        report_measured(h, "bags 0+1", b.predict(Xh, raw_score=True, start_iteration=0, num_iteration=2 * per))


# name -> (power of eff in the grade floor(30 eff^power), gain of grade i, LightGBM overrides); "base" is the trainer's
RANK_VARIANTS = {
    "base": (4, lambda i: i, {}),
    "p2": (2, lambda i: i, {}),
    "p8": (8, lambda i: i, {}),
    "p16": (16, lambda i: i, {}),
    "gain-sq": (4, lambda i: i * i / 30, {}),
    "trunc20": (4, lambda i: i, {"lambdarank_truncation_level": 20}),
    "trunc80": (4, lambda i: i, {"lambdarank_truncation_level": 80}),
    "leaves127": (4, lambda i: i, {"num_leaves": 127}),
    "ff0.8": (4, lambda i: i, {"feature_fraction": 0.8}),
    "mono": (4, lambda i: i, {"monotone": {"pad_eff": 1, "eff_m": 1, "eff_n": 1, "eff_k": 1, "wave_eff": 1,
                                            "est_time_us": -1, "launches_est_us": -1}}),
}


def monotone(over: dict) -> dict:
    """A variant's {"monotone": {feature: +1 | -1}} as LightGBM's monotone_constraints over every feature."""
    if "monotone" not in over:
        return over
    names = _core.feature_names()
    signs = over["monotone"]
    return dict({k: v for k, v in over.items() if k != "monotone"},
                monotone_constraints=[signs.get(n, 0) for n in names], monotone_constraints_method="advanced")


def probe_rank_labels(a) -> None:
    df, X, folds = conv_training_cv()
    h, Xh, _ = heldout_scores()
    for name in a.variants:
        power, gain, over = RANK_VARIANTS[name]
        d = df.assign(y_rank=np.floor(30 * df["eff"] ** power).astype(int))
        p = dict(tr.params_for("lambdarank", 1, "conv"), learning_rate=0.15, num_threads=2,
                 label_gain=[float(gain(i)) for i in range(31)], **monotone(over))
        print(f"{name:10s} CV", standin_cv(d, X, folds, "lambdarank", p, a.rounds), flush=True)
        b = lgb.train(p, tr.dataset(X, d, "lambdarank", lgb), num_boost_round=a.rounds)
        report_measured(h, f"{name} held out", b.predict(Xh))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="probe", required=True)
    r = sub.add_parser("registers")
    r.add_argument("--rounds", type=int, default=800)
    r.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    r = sub.add_parser("rerank")
    r.add_argument("--near", type=float, default=0.7)
    r.add_argument("--objective", choices=("reg", "rank"), default="reg")
    r.add_argument("--rounds", type=int, default=600)
    r = sub.add_parser("analytic")
    r.add_argument("--op", choices=("conv", "gemm"), default="conv")
    r.add_argument("--context", action="store_true", help="also the pool-relative CONTEXT columns")
    r.add_argument("--row-only", action="store_true", help="only the per-row estimate, not its ratio to the pool's best")
    r.add_argument("--skip-base", action="store_true", help="only the model with the added features")
    r.add_argument("--rounds", type=int, default=800)
    r.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    r = sub.add_parser("pairwise")
    r.add_argument("--top", type=int, default=10, help="each training problem's fastest rows that form the pairs")
    r.add_argument("--rounds", type=int, default=600)
    r.add_argument("--seeds", type=int, nargs="+", default=[1])
    r = sub.add_parser("gemm-more")
    r.add_argument("--rounds", type=int, default=500)
    for name in ("objective-cv", "objective-heldout"):
        sub.add_parser(name).add_argument("--rounds", type=int, default=600)
    sub.add_parser("teacher-bags")
    r = sub.add_parser("rank-labels")
    r.add_argument("--rounds", type=int, default=600)
    r.add_argument("--variants", nargs="+", default=list(RANK_VARIANTS), choices=list(RANK_VARIANTS))
    r = sub.add_parser("knn")
    r.add_argument("--k", type=int, nargs="+", default=[10, 30, 100])
    r.add_argument("--lam", type=float, nargs="+", default=[0.1, 0.25, 0.5, 1.0])
    a = ap.parse_args()
    {"knn": probe_knn, "objective-cv": probe_objective_cv, "objective-heldout": probe_objective_heldout,
     "teacher-bags": probe_teacher_bags, "rank-labels": probe_rank_labels, "registers": probe_registers, "analytic": probe_analytic, "pairwise": probe_pairwise, "rerank": probe_rerank, "gemm-more": probe_gemm_more}[a.probe](a)


if __name__ == "__main__":
    main()
