"""Probe: shortlist a problem's candidates from its nearest distillation problems (the teacher's first M
there), rank the shortlist with the student, and score the pick by the teacher against its own best
over the whole pool (held-out fifth of the distillation problems, as tilepick.distill splits them).

  PYTHONPATH=python python3 experiments/2026-11-25-atlas-probe/atlas_probe.py --only conv_fwd_half_h200 --cache /tmp/distill-cache

Pickers compared on each shortlist: the student, the teacher (what the shortlist can give at best), "vote"
(the neighbours' teacher scores of each config, relative to their best), "resid" (the student plus the
neighbours' teacher-minus-student residuals) and, with --ranker, LightGBM rankers fitted to the teacher
on the fit problems' top rows. The last line is the shipped fast path (student, then the teacher re-scoring
its first 16) on the same problems. Results: bench/results/2026-11-25-atlas-probe.txt.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from tilepick import distill

# --- the shortlist: nearest distillation problems by their leading (problem) features ---------------

KEY = {"gemm": ["op", "in_dtype", "a_kmajor", "b_kmajor", "c_rowmajor"],
       "conv": ["op", "in_dtype", "conv_ndim", "conv_depthwise", "conv_filter_d", "conv_filter_h", "conv_filter_w",
                "conv_stride_d", "conv_stride_h", "conv_stride_w"]}
DIST = {"gemm": [("log2_m", 0), ("log2_n", 0), ("log2_k", 0), ("log2_batch", 0), ("max_align_a", 1),
                 ("max_align_b", 1), ("max_align_c", 1), ("epi_bias", 0), ("epi_act", 0), ("beta_nonzero", 0)],
        "conv": [("log2_m", 0), ("log2_n", 0), ("log2_k", 0), ("conv_log2_groups", 0), ("conv_c_per_group", 1),
                 ("conv_k_per_group", 1), ("conv_mb", 1), ("conv_out_d", 1), ("conv_out_h", 1), ("conv_out_w", 1),
                 ("conv_pad_h", 0), ("conv_pad_w", 0), ("conv_dilation_max", 0), ("max_align_a", 1),
                 ("max_align_b", 1), ("max_align_c", 1)]}


def kind(op: str) -> str:
    return "gemm" if op == "gemm" else "conv"


def key_width(op: str) -> int:
    return len(KEY[kind(op)])


def descriptors(problems: list[str], arch: str, op: str) -> np.ndarray:
    from tilepick import _core as c

    names = list(c.feature_names())
    # any config: only the leading problem features are read
    cfg = c.legal_configs(problems[0], arch)[0]
    X = c.features_batch(problems, [cfg] * len(problems), arch, 2)
    cols = [names.index(n) for n in KEY[kind(op)]]
    out = [X[:, cols]]
    for n, log in DIST[kind(op)]:
        v = X[:, names.index(n)]
        out.append(np.log2(1 + np.nan_to_num(v))[:, None] if log else np.nan_to_num(v)[:, None])
    return np.hstack(out)


class Index:
    def __init__(self, D: np.ndarray, nkey: int, tops: list[list[str]]):
        self.key, self.x, self.tops = D[:, :nkey], D[:, nkey:], tops
        sd = self.x.std(axis=0)
        self.w = np.where(sd > 0, 1 / np.where(sd > 0, sd, 1), 0.0) ** 2
        self.nkey = nkey

    def nearest(self, d: np.ndarray, k: int):
        mism = (self.key != d[:self.nkey]).sum(axis=1)
        dist = ((self.x - d[self.nkey:]) ** 2 * self.w).sum(axis=1)
        return np.lexsort((np.arange(len(dist)), dist, mism))[:k]

    def shortlist(self, d: np.ndarray, k: int) -> list[str]:
        order = self.nearest(d, k)
        out, seen = [], set()
        for rank in range(max(len(t) for t in self.tops)):
            for j in order:
                if rank < len(self.tops[j]) and self.tops[j][rank] not in seen:
                    seen.add(self.tops[j][rank])
                    out.append(self.tops[j][rank])
        return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=str(distill.ROOT / "models"))
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--cache", default="/tmp/distill-cache")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--k", type=int, nargs="*", default=[1, 2, 4, 8])
    ap.add_argument("--m", type=int, nargs="*", default=[2, 4, 8])
    ap.add_argument("--ranker", type=lambda v: tuple(int(x) for x in v.split("x")), nargs="*", default=[],
                    help="TREESxLEAVESxTOP: also fit a ranker on each fit problem's teacher top TOP rows")
    args = ap.parse_args()
    c = distill.core()
    Path(args.cache).mkdir(exist_ok=True)
    for folder in sorted(p.parent for p in Path(args.models).glob("*/feature_spec.json")):
        if args.only and folder.name not in args.only:
            continue
        spec = json.loads((folder / "feature_spec.json").read_text())
        op, family, arch = spec["op"], spec["dtype_family"], spec["arch"]
        files = sorted(distill.ROOT.glob(distill.PROBLEM_FILES))
        base = distill.training_problems(op, family, files)
        n_syn = distill.SYNTHETIC["gemm" if op == "gemm" else "conv"]
        problems, origin = distill.sample_problems(base, n_syn, 11)
        cache = Path(args.cache) / f"{folder.name}.11.{n_syn}.pkl"
        import pickle

        if cache.exists():
            pools, scores, bag = pickle.loads(cache.read_bytes())
        else:
            pools, scores, bag = distill.teacher_table(folder, problems, arch, args.threads)
            cache.write_bytes(pickle.dumps((pools, scores, bag)))
        rows = [i for i in range(len(problems)) if len(pools[i])]
        rng = np.random.default_rng(11)
        held = set(rng.choice(len(base), size=max(1, len(base) // 5), replace=False).tolist())
        fit = [i for i in rows if origin[i] not in held]
        val = [i for i in rows if origin[i] in held]
        desc = descriptors([problems[i] for i in rows], arch, op)
        D = {i: desc[j] for j, i in enumerate(rows)}
        # student scores of every pool row
        student = str(folder / "fast" / "model.txt.gz")
        stud = {}
        for part in range(0, len(rows), 500):
            chunk = rows[part:part + 500]
            X = c.features_batch([problems[i] for i in chunk for _ in pools[i]], [x for i in chunk for x in pools[i]],
                                 arch, args.threads)
            sp = np.asarray(c.gbdt_predict(student, X))
            at = 0
            for i in chunk:
                stud[i] = sp[at:at + len(pools[i])]
                at += len(pools[i])
        forms = {i: [c.pool_form(x) for x in pools[i]] for i in rows}
        rankers = {}
        for trees, leaves, top in args.ranker:
            import lightgbm as lgb

            P, C, y = [], [], []
            rr = np.random.default_rng(5)
            for i in fit:
                order = np.argsort(-scores[i], kind="stable")
                pick = list(order[:top]) + list(rr.choice(order[top:], size=min(8, max(0, len(order) - top)), replace=False))
                P.extend([problems[i]] * len(pick)), C.extend(pools[i][t] for t in pick)
                y.extend(np.maximum(scores[i][pick] - scores[i].max(), -1.0))
            X = c.features_batch(P, C, arch, args.threads)
            params = dict(distill.LGB_PARAMS, num_leaves=leaves, seed=11, num_threads=args.threads)
            model = lgb.train(params, lgb.Dataset(X, label=np.array(y)), num_boost_round=trees)
            pred = {}
            for i in val:
                pred[i] = model.predict(c.features_batch([problems[i]] * len(pools[i]), pools[i], arch, 1), num_threads=1)
            rankers[f"r{trees}x{leaves}t{top}"] = pred
            print(f"ranker {trees}x{leaves} top {top}: {len(y)} rows", flush=True)
        for m in args.m:
            tops = {i: np.argsort(-scores[i], kind="stable")[:m] for i in fit}
            index = Index(np.array([D[i] for i in fit]), key_width(op), [[forms[i][t] for t in tops[i]] for i in fit])
            # per fit entry and top config: teacher score vs its best, and the teacher-student residual
            rel = {i: {forms[i][t]: scores[i][t] - scores[i].max() for t in tops[i]} for i in fit}
            res = {i: {forms[i][t]: scores[i][t] - stud[i][t] for t in tops[i]} for i in fit}
            for k in args.k:
                eff = {"student": [], "teacher": [], "vote": [], "resid": [], **{n: [] for n in rankers}}
                size = []
                for i in val:
                    near = index.nearest(D[i], k)
                    short = index.shortlist(D[i], k)
                    pos = {f: t for t, f in enumerate(forms[i])}
                    idx = np.array([pos[f] for f in short if f in pos], dtype=int)
                    s = scores[i]
                    size.append(len(idx))
                    if len(idx) == 0:
                        idx = np.arange(len(s))
                    fi = [forms[i][t] for t in idx]
                    vote = np.array([np.mean([rel[fit[j]].get(f, -1.0) for j in near]) for f in fi])
                    resid = np.array([np.mean([res[fit[j]][f] for j in near if f in res[fit[j]]] or [0.0]) for f in fi])
                    picks = {"student": idx[np.argmax(stud[i][idx])], "teacher": idx[np.argmax(s[idx])],
                             "vote": idx[np.argmax(vote)], "resid": idx[np.argmax(stud[i][idx] + resid)],
                             **{n: idx[np.argmax(r[i][idx])] for n, r in rankers.items()}}
                    for name, pick in picks.items():
                        eff[name].append(np.exp(-(s.max() - s[int(pick)])))
                line = " | ".join(f"{n} {np.mean(v):.4f} {np.quantile(v, .1):.4f} {np.min(v):.4f}" for n, v in eff.items())
                print(f"{folder.name} M={m} K={k}: shortlist {np.mean(size):.1f} (max {max(size)}): {line}", flush=True)
        # the shipped fast path on the same problems (student top 16 re-scored by the teacher)
        eff = []
        for i in val:
            s = scores[i]
            top = np.argsort(-stud[i], kind="stable")[:16]
            pick = int(top[np.argmax(s[top])])
            eff.append(np.exp(-(s.max() - s[pick])))
        e = np.array(eff)
        print(f"{folder.name} fast (student + teacher x16): mean {e.mean():.4f} p10 {np.quantile(e, .1):.4f} "
              f"min {e.min():.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
