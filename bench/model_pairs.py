"""Pairs to measure next (issue 5, active sampling): per problem, the shipped model's top-K over the whole
legal pool, plus its top-KP over the pruned pool (models/<m>/candidates.txt), minus pairs the given record
files already hold. Measuring them makes the held-out eval see the model's own first choices and gives
training the configs the model currently believes in. Output: 'problem|config' lines for `tilepick sweep --pairs`.

usage: python bench/model_pairs.py PROBLEMS.txt... --records R.csv.gz... [-k 16] [--kp 8] [--models DIR]
       [--select fast full] [--arch A] --out PAIRS.txt[.gz]
--arch: the arch spec the models select for (default h200; h100_sxm for a model trained on H100 records).
-k 0 --kp 1: dispatch's first choice (the pruned pool where a model has one), nothing over the whole pool.
"""
import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
from tilepick.records import read_records  # noqa: E402


def open_out(path: str):
    """A text file to write, gzip-compressed when the name ends in .gz (tilepick sweep --pairs reads both)."""
    return gzip.open(path, "wt") if path.endswith(".gz") else open(path, "w")


def problems_of(path: str) -> list[str]:
    out = []
    for line in open(path):
        text = line.split("#", 1)[0].strip()
        if text:
            first, _, rest = text.partition(" ")
            out.append(rest.strip() if first.endswith(":") else text)
    return out


def ranked(problems: list[str], models: str, k: int, modes: list[str], arch: str = "h200") -> dict[str, list[str]]:
    """problem -> [canonical problem, top-k configs of each selection mode...], from a fresh process per
    mode (the default selector reads TILEPICK_MODELS_DIR once)."""
    out: dict[str, list[str]] = {}
    for mode in modes:
        for p, c in ranked_one(problems, models, k, mode, arch).items():
            out[p] = list(dict.fromkeys(out.get(p, c[:1]) + c[1:]))
    return out


def ranked_one(problems: list[str], models: str, k: int, mode: str, arch: str = "h200") -> dict[str, list[str]]:
    code = ("import sys, json; from tilepick import _core\n"
            "for p in json.load(sys.stdin): s = _core.select(p, %r, %d, %r); print(json.dumps([p, [s['problem']] + [t['config'] for t in s['top']]]))" % (arch, k, mode))
    env = dict(os.environ, TILEPICK_MODELS_DIR=models, PYTHONPATH=str(ROOT / "python"))
    import json
    res = subprocess.run([sys.executable, "-c", code], input=json.dumps(problems), text=True, env=env,
                         capture_output=True, check=True)
    return {p: c for p, c in map(json.loads, res.stdout.splitlines())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--records", nargs="*", default=[])
    ap.add_argument("-k", type=int, default=16, help="top configs over the whole legal pool")
    ap.add_argument("--kp", type=int, default=8, help="top configs over the pruned pool")
    ap.add_argument("--models", default=str(ROOT / "models"))
    ap.add_argument("--select", nargs="+", default=["fast"], choices=["fast", "full"],
                    help="selection modes whose top configs are taken (their union)")
    ap.add_argument("--arch", default="h200", help="arch spec the models select for")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    problems = [p for f in a.problems for p in problems_of(f)]
    done = set()
    if a.records:
        _, df = read_records(a.records)
        done = set(zip(df.problem.str.strip(), df.config.str.strip()))
    if not a.k and not a.kp:
        ap.error("-k and --kp are both 0: nothing to list")
    top_whole = {}
    if a.k:
        with tempfile.TemporaryDirectory() as whole:  # the same models without their pruned sets
            shutil.copytree(a.models, whole, dirs_exist_ok=True, ignore=shutil.ignore_patterns("candidates.txt*"))
            top_whole = ranked(problems, whole, a.k, a.select, a.arch)
    top_pruned = ranked(problems, a.models, a.kp, a.select, a.arch) if a.kp else {}
    n = 0
    with open_out(a.out) as f:
        for p in problems:
            # records hold the canonical problem string, as the selector returns it
            canon = (top_whole.get(p) or top_pruned[p])[0]
            configs = list(dict.fromkeys(top_whole.get(p, [canon])[1:] + top_pruned.get(p, [canon])[1:]))
            for c in configs:
                if (canon, c) not in done:
                    f.write(f"{canon}|{c}\n")
                    n += 1
    print(f"{a.out}: {n} pairs for {len(problems)} problems ({len(done)} recorded pairs skipped where matched)")


if __name__ == "__main__":
    main()
