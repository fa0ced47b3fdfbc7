"""Distil each shipped model into a small, fast student: python -m tilepick.distill [--models models]

For every model folder models/<m>/ (the teacher), this samples problems (the training problem files
data/problems/sweep/*_train*.txt of the teacher's op, never a *_val* file, plus random problems
around them), scores every config the selector would score (its pruned pool, else the legal pool)
with the teacher, and writes models/<m>/fast/:

  model.txt.gz       a small LightGBM regressor (128 trees x 31 leaves) fitted to the teacher's
                     score minus the problem's best (log time-ratio units: the teacher's score / its
                     bag), clipped at -CLIP (16 for a lambdarank teacher, whose scores are not time ratios)
  feature_spec.json  the teacher's schema / space hashes and feature names, "teacher_version" (the
                     selector refuses the student when the teacher file changes), "rescore_top" (the
                     selector re-scores the student's best M with the teacher)
  manifest.json      how it was made: teacher, problems, rows, params, held-out table, command
  candidates.txt     only with --set: a greedy cover of the teacher's near-best configs (within --tol)
                     that the student scores instead of the teacher's pool

It prints (and keeps in the manifest) a table over held-out sampled problems (a fifth of the
training problems with their random neighbours, fitted without them): the efficiency the teacher
predicts for the fast pick against its own best, with and without the re-scoring.

Deterministic (seeded sampling, LightGBM deterministic=True, fixed threads). Re-run it after the
teachers are retrained; the selector falls back to the teacher until then (teacher_version).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

from tilepick.train import fnv_hex16, model_file, prediction_text, text_fnv, write_text_gz

ROOT = Path(__file__).resolve().parents[2]
PROBLEM_FILES = "data/problems/sweep/*_train*.txt"
# Student and pool settings, chosen by the held-out table this script prints (docs/selection.md).
TOL = 0.01           # near-best band of the cover, in log time ratio (~1%)
REDUNDANCY = 1       # near-best configs each sampled problem keeps in the cover
TREES, LEAVES = 128, 31
MAX_DEPTH = -1       # student tree depth limit: the flat evaluator walks each tree's depth
CLIP = 1.0           # targets below the problem's best by more than this are clipped (regression teachers:
                     # log time ratio units)
# A lambdarank teacher's scores are not log time ratios: they spread ~16 units over a pool (docs/selection.md), so
# its students clip there instead (with 1, 99% of the configs sat on the clip).
CLIP_BY_OBJECTIVE = {"lambdarank": 16.0}
RESCORE_TOP = 16     # the selector re-scores the student's best 16 with the teacher
SYNTHETIC = {"gemm": 6, "conv": 1}  # random problems per training problem
LGB_PARAMS = dict(objective="regression", learning_rate=0.15, min_data_in_leaf=20, lambda_l2=1.0,
                  feature_fraction=1.0, bagging_fraction=1.0, max_bin=255, deterministic=True,
                  force_row_wise=True, verbose=-1)


def core():
    from tilepick import _core

    return _core


# --- problems ---------------------------------------------------------------------------------

def training_problems(op: str, family: str, files: list[Path]) -> list[str]:
    """Canonical problems of the teacher's op and dtype family in the training problem files."""
    c = core()
    out = []
    for f in files:
        if "_val" in f.name:
            raise ValueError(f"{f}: held-out problem files are never used for distillation")
        for _, p in c.problem_file(str(f)):
            if c.problem_op(p) == op and c.dtype_family(p) == family:
                out.append(p)
    return sorted(set(out))


def _scale(v: int, f: float, multiple: int = 1) -> int:
    x = max(1, int(round(v * f)))
    return max(multiple, int(round(x / multiple)) * multiple) if multiple > 1 else x


def perturb(problem: str, rng: np.random.Generator) -> str:
    """A random problem near `problem`: sizes scaled by powers of two (conv: batch, spatial, channels
    per group), sometimes rounded to a multiple of 8. May be invalid (the caller checks)."""
    tok = dict((m.group(1), int(m.group(2))) for m in re.finditer(r"\b([a-z]+)(\d+)\b", problem))
    new = {}
    if problem.startswith("gemm"):
        for key in ("m", "n", "k"):
            if rng.random() < 0.6:
                new[key] = _scale(tok[key], 2.0 ** rng.uniform(-2, 2), int(rng.choice([1, 8, 64])))
    else:
        g = tok.get("g", 1)
        if rng.random() < 0.6:
            new["mb"] = _scale(tok["mb"], 2.0 ** rng.uniform(-2, 2))
        if rng.random() < 0.5:
            f = 2.0 ** rng.uniform(-1, 1)
            for key in ("id", "ih", "iw"):
                if key in tok and tok[key] > 1:
                    new[key] = _scale(tok[key], f)
        if rng.random() < 0.5:
            f = 2.0 ** rng.uniform(-1, 1)
            if tok["ic"] == g and tok["oc"] == g and g > 1:  # depthwise: the groups are the channels
                new["g"] = new["ic"] = new["oc"] = _scale(g, f, 8)
            else:
                for key in ("ic", "oc"):
                    new[key] = g * _scale(tok[key] // g, f, int(rng.choice([1, 8])))
    out = problem
    for key, v in new.items():
        out = re.sub(rf"\b{key}\d+\b", f"{key}{v}", out)
    return out


def sample_problems(base: list[str], n_synthetic: int, seed: int) -> tuple[list[str], list[int]]:
    """Base problems plus n_synthetic valid perturbations of each; returns problems and the index of
    the base problem each came from (the hold-out split keeps a base and its neighbours together)."""
    c = core()
    rng = np.random.default_rng(seed)
    seen, problems, origin = set(base), list(base), list(range(len(base)))
    for i, p in enumerate(base):
        for _ in range(n_synthetic * 3):
            if sum(1 for o in origin if o == i) > n_synthetic:
                break
            q = perturb(p, rng)
            try:
                q = c.canonical_problem(q)
            except ValueError:
                continue
            if q not in seen:
                seen.add(q)
                problems.append(q)
                origin.append(i)
    return problems, origin


# --- teacher scores ---------------------------------------------------------------------------

def teacher_table(folder: Path, problems: list[str], arch: str, threads: int, chunk_rows: int = 200_000):
    """Per problem: the selector's pool (config strings) and the teacher's scores (log time ratio,
    higher is better). Features are recomputed later for the student's rows only. Scored by the C++
    evaluator (the selector's own, equal to LightGBM's predictions within 1e-9 and ~60x faster here)."""
    c = core()
    spec = json.loads((folder / "feature_spec.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text()) if (folder / "manifest.json").exists() else {}
    bag = int(manifest.get("bag") or 1)
    teacher = str(model_file(folder))
    pools, scores = [], []
    batch_p, batch_c, sizes = [], [], []

    def flush():
        if not batch_p:
            return
        X = c.features_batch(batch_p, batch_c, arch, threads)
        s = np.asarray(c.gbdt_predict(teacher, X)) / bag
        at = 0
        for n in sizes:
            scores.append(s[at:at + n])
            at += n
        batch_p.clear(), batch_c.clear(), sizes.clear()

    models_dir = str(folder.parent)
    for p in problems:
        configs, _ = c.selector_pool(p, arch, models_dir, "full")
        pools.append(configs)
        batch_p.extend([p] * len(configs)), batch_c.extend(configs), sizes.append(len(configs))
        if len(batch_p) >= chunk_rows:
            flush()
    flush()
    return pools, scores, bag


# --- student pool: greedy cover of the teacher's near-best configs ----------------------------

def cover(pools, scores, rows, tol: float, redundancy: int) -> list[str]:
    """Pool-form configs, greedily chosen until each problem in `rows` keeps min(redundancy, its
    count) configs within `tol` of its best teacher score; ties by config string."""
    c = core()
    near = []
    for i in rows:
        s = scores[i]
        best = s.max()
        near.append({c.pool_form(cfg) for cfg, v in zip(pools[i], s) if v >= best - tol})
    need = [min(redundancy, len(n)) for n in near]
    chosen: list[str] = []
    have = [0] * len(near)
    while any(h < n for h, n in zip(have, need)):
        gain: dict[str, int] = {}
        for j, n in enumerate(near):
            if have[j] < need[j]:
                for cfg in n:
                    if cfg not in chosen:
                        gain[cfg] = gain.get(cfg, 0) + 1
        best = min(gain, key=lambda k: (-gain[k], k))
        chosen.append(best)
        for j, n in enumerate(near):
            if best in n:
                have[j] += 1
    return sorted(chosen)


def restrict(pools, scores, chosen: set[str] | None):
    """Per problem: indices of its pool configs in `chosen` (pool form; None: all of them)."""
    c = core()
    if chosen is None:
        return [np.arange(len(p)) for p in pools]
    return [np.array([k for k, cfg in enumerate(pools[i]) if c.pool_form(cfg) in chosen], dtype=int)
            for i in range(len(pools))]


# --- student ----------------------------------------------------------------------------------

def student_rows(problems, pools, scores, keep, rows, arch, threads, clip=CLIP):
    """Features, targets and problem ids of the kept configs of problems `rows`. Target: the teacher's
    score minus its best over the kept configs, clipped at -clip (how far below the top a config is
    matters only near the top)."""
    c = core()
    P, C, y, gid = [], [], [], []
    for i in rows:
        idx = keep[i]
        if len(idx) == 0:
            continue
        s = scores[i][idx]
        P.extend([problems[i]] * len(idx)), C.extend(pools[i][k] for k in idx)
        y.append(np.maximum(s - s.max(), -clip)), gid.extend([i] * len(idx))
    X = c.features_batch(P, C, arch, threads) if P else np.zeros((0, len(c.feature_names())))
    return X, (np.concatenate(y) if y else np.zeros(0)), np.array(gid, dtype=int)


def fit_student(X, y, trees: int, leaves: int, seed: int, threads: int, max_depth: int = -1):
    import lightgbm as lgb

    params = dict(LGB_PARAMS, num_leaves=leaves, max_depth=max_depth, seed=seed, num_threads=threads)
    ds = lgb.Dataset(X, label=y, feature_name=list(core().feature_names()), free_raw_data=False)
    return lgb.train(params, ds, num_boost_round=trees), params


def losses(pools, scores, keep, rows, pred_by_problem, rescore: int):
    """Teacher-predicted loss (log time ratio vs the teacher's best over its whole pool) of the pick:
    the student's argmax over the kept configs, or the teacher's best of the student's top `rescore`."""
    out, agree = [], 0
    for i in rows:
        s, idx = scores[i], keep[i]
        if len(idx) == 0:
            pick = int(np.argmax(s))  # the selector falls back to the teacher
        else:
            pred = pred_by_problem[i]
            order = np.lexsort((np.arange(len(idx)), -pred))
            if rescore > 1:
                top = idx[order[:rescore]]
                pick = int(top[np.argmax(s[top])])
            else:
                pick = int(idx[order[0]])
        out.append(float(s.max() - s[pick]))
        agree += int(pick == int(np.argmax(s)))
    x = np.array(out)
    return {"mean_eff": float(np.mean(np.exp(-x))), "p10_eff": float(np.quantile(np.exp(-x), 0.10)),
            "min_eff": float(np.exp(-x.max())), "agree_top1": agree / max(1, len(rows))}


def predict_groups(model, X, gid):
    pred = model.predict(X, raw_score=True, num_threads=1)
    return {int(g): pred[gid == g] for g in np.unique(gid)}


# --- one model folder -------------------------------------------------------------------------

def distill(folder: Path, args) -> dict:
    c = core()
    spec = json.loads((folder / "feature_spec.json").read_text())
    op, family, arch = spec["op"], spec["dtype_family"], spec["arch"]
    clip = args.clip if args.clip is not None else CLIP_BY_OBJECTIVE.get(spec.get("objective"), CLIP)
    files = sorted(ROOT.glob(PROBLEM_FILES)) if not args.problems_file else [Path(f) for f in args.problems_file]
    base = training_problems(op, family, files)
    if not base:
        print(f"{folder.name}: no training problems of {op} {family}; skipped", flush=True)
        return {}
    n_syn = args.synthetic if args.synthetic is not None else SYNTHETIC["gemm" if op == "gemm" else "conv"]
    problems, origin = sample_problems(base, n_syn, args.seed)
    t0 = time.time()
    cache = Path(args.cache) / f"{folder.name}.{args.seed}.{n_syn}.pkl" if args.cache else None
    if cache and cache.exists():
        import pickle

        pools, scores, bag = pickle.loads(cache.read_bytes())
    else:
        pools, scores, bag = teacher_table(folder, problems, arch, args.threads)
        if cache:
            import pickle

            cache.write_bytes(pickle.dumps((pools, scores, bag)))
    rows_all = [i for i in range(len(problems)) if len(pools[i])]
    print(f"{folder.name}: {len(base)} training + {len(problems) - len(base)} random problems, "
          f"{sum(len(p) for p in pools)} teacher rows ({time.time() - t0:.0f} s)", flush=True)
    # Held-out split by base problem (a base and its neighbours together), for the printed table.
    rng = np.random.default_rng(args.seed)
    held = set(rng.choice(len(base), size=max(1, len(base) // 5), replace=False).tolist())
    fit_rows = [i for i in rows_all if origin[i] not in held]
    val_rows = [i for i in rows_all if origin[i] in held]
    table = []
    grid = args.grid or [(args.trees, args.leaves)]
    tols = args.tol_grid or [args.tol]
    for tol in tols:
        chosen = None if (not args.set) else set(cover(pools, scores, fit_rows, tol, args.redundancy))
        keep = restrict(pools, scores, chosen)
        X, y, gid = student_rows(problems, pools, scores, keep, fit_rows, arch, args.threads, clip)
        Xv, _, gv = student_rows(problems, pools, scores, keep, val_rows, arch, args.threads, clip)
        ideal = {i: scores[i][keep[i]] for i in val_rows}  # the teacher on the student's pool
        n_set = 0 if chosen is None else len(chosen)
        row = {"tol": tol, "set": n_set, "teacher_on_set": losses(pools, scores, keep, val_rows, ideal, 0)}
        print(f"  tol {tol}: {n_set or 'all'} configs; teacher on the set (held-out): {row['teacher_on_set']}", flush=True)
        for trees, leaves in grid:
            model, _ = fit_student(X, y, trees, leaves, args.seed, args.threads, args.max_depth)
            pred = predict_groups(model, Xv, gv)
            for m in sorted({0, args.rescore, *args.rescore_grid}):
                r = losses(pools, scores, keep, val_rows, pred, m)
                table.append({"tol": tol, "set": n_set, "trees": trees, "leaves": leaves, "max_depth": args.max_depth,
                              "rescore": m, **r})
                print(f"    trees {trees:4d} leaves {leaves:3d} rescore {m}: " +
                      " ".join(f"{k} {v:.4f}" for k, v in r.items()), flush=True)
    if args.dry_run:
        return {"table": table}
    # Final: the cover and the student over every sampled problem.
    chosen = [] if (not args.set) else cover(pools, scores, rows_all, args.tol, args.redundancy)
    keep = restrict(pools, scores, set(chosen) if chosen else None)
    X, y, gid = student_rows(problems, pools, scores, keep, rows_all, arch, args.threads, clip)
    model, params = fit_student(X, y, args.trees, args.leaves, args.seed, args.threads, args.max_depth)
    pred = predict_groups(model, X, gid)
    in_sample = losses(pools, scores, keep, rows_all, pred, args.rescore)
    out = folder / "fast"
    out.mkdir(exist_ok=True)
    model_text = model.model_to_string()
    (out / "model.txt").unlink(missing_ok=True)  # written plain before; the gzip file is a third the size
    write_text_gz(out / "model.txt.gz", model_text)
    fast_spec = {**{k: spec[k] for k in ("feature_names", "schema_hash", "feature_version", "space_hash", "op",
                                        "dtype_family", "arch")},
                 "objective": "regression", "score": "higher_is_better",
                 "teacher_version": c.model_version(str(folder)), "rescore_top": args.rescore,
                 "model_text_fnv": text_fnv(model_text)}
    if "spaces" in spec:
        fast_spec["spaces"] = spec["spaces"]
    (out / "feature_spec.json").write_text(json.dumps(fast_spec, indent=1) + "\n")
    command = "python -m tilepick.distill " + " ".join(args.argv)
    header = [f"# tilepick fast pool for {folder.name}: the student scores only the legal configs listed here",
              f"# made by: {command}",
              f"# rule: greedy cover; each of {len(rows_all)} sampled problems keeps min({args.redundancy}, its count) "
              f"configs within {args.tol} (log time ratio) of the teacher's best predicted score",
              f"# {len(chosen)} configs"]
    if chosen:
        (out / "candidates.txt").write_text("\n".join(header + chosen) + "\n")
    elif (out / "candidates.txt").exists():
        (out / "candidates.txt").unlink()  # --no-set: the student scores the teacher's pool
    manifest = {
        "teacher": folder.name, "teacher_version": fast_spec["teacher_version"],
        "teacher_text_fnv": fast_spec["teacher_version"].rsplit("@", 1)[1], "teacher_bag": bag,
        "problem_files": [str(f.resolve().relative_to(ROOT)) if f.resolve().is_relative_to(ROOT) else str(f)
                          for f in files],
        "problems": {"training": len(base), "random": len(problems) - len(base), "seed": args.seed},
        "teacher_rows": int(sum(len(p) for p in pools)), "student_rows": int(len(y)),
        "candidates": len(chosen), "tol": args.tol, "redundancy": args.redundancy,
        "target": f"teacher raw score / bag (log time ratio, higher is better) minus its best over the problem's kept "
                  f"configs, clipped at -{clip}", "clip": clip,
        "params": {**params, "num_boost_round": args.trees}, "rescore_top": args.rescore,
        "in_sample": in_sample, "held_out_table": table, "student_model_fnv": fnv_hex16(prediction_text(model_text).encode()),
        "command": command, "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"  wrote {out}: {len(chosen)} configs, {args.trees} trees x {args.leaves} leaves, in-sample {in_sample}",
          flush=True)
    return manifest


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m tilepick.distill", description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=str(ROOT / "models"), help="models directory (teachers; fast/ written inside)")
    ap.add_argument("--only", nargs="*", default=[], help="model folder names to distil (default: all)")
    ap.add_argument("--problems-file", nargs="*", default=[], help=f"training problem files (default {PROBLEM_FILES})")
    ap.add_argument("--synthetic", type=int, help="random problems per training problem (default gemm 6, conv 1)")
    ap.add_argument("--tol", type=float, default=TOL)
    ap.add_argument("--redundancy", type=int, default=REDUNDANCY)
    ap.add_argument("--trees", type=int, default=TREES)
    ap.add_argument("--leaves", type=int, default=LEAVES)
    ap.add_argument("--rescore", type=int, default=RESCORE_TOP, help="the student's top M re-scored by the teacher")
    ap.add_argument("--clip", type=float, help="targets clipped at -CLIP below the problem's best (default: 16 for a "
                    "lambdarank teacher, else 1)")
    ap.add_argument("--set", action="store_true",
                    help="also write fast/candidates.txt (a cover of the teacher's near-best configs) for the student "
                         "to score instead of the teacher's pool; off by default (it failed the held-out guard)")
    ap.add_argument("--max-depth", type=int, default=MAX_DEPTH, help="student tree depth limit (-1: none)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--cache", help="folder for the teacher's scores (re-runs with the same seed skip the teacher)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dry-run", action="store_true", help="print the held-out table only, write nothing")
    ap.add_argument("--grid", type=lambda s: tuple(int(x) for x in s.split("x")), nargs="*",
                    help="TREESxLEAVES students to compare on the held-out split")
    ap.add_argument("--tol-grid", type=float, nargs="*", help="cover tolerances to compare")
    ap.add_argument("--rescore-grid", type=int, nargs="*", default=[], help="rescore M values to compare")
    args = ap.parse_args(argv)
    args.argv = argv
    folders = sorted(p.parent for p in Path(args.models).glob("*/feature_spec.json"))
    for f in folders:
        if args.only and f.name not in args.only:
            continue
        distill(f, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
