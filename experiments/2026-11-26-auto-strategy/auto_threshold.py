"""What dispatch's auto strategy buys at each threshold: `tilepick eval` run once per TILEPICK_POLICY=auto:time_us=T (the eval's
model of auto is the dispatcher's rule, what_to_time in policy.hpp), its auto numbers per op: mean / P10 / min /
time-weighted efficiency against the fastest kernel measured, and the share of problems timed.
    python3 experiments/2026-11-26-auto-strategy/auto_threshold.py [--thresholds 0 50 100 200 500 inf] -- <tilepick eval arguments>
e.g. the README's first command's --records ... --vendor-records ... --problems-file ... arguments.
"""
import argparse
import json
import os
import subprocess
import tempfile


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0, 50, 100, 200, 500, float("inf")])
    ap.add_argument("--cli", default="build/tilepick")
    ap.add_argument("eval_args", nargs=argparse.REMAINDER, help="after --: the tilepick eval arguments")
    a = ap.parse_args()
    args = [x for x in a.eval_args if x != "--"]
    header = False
    for t in a.thresholds:
        with tempfile.TemporaryDirectory() as out:
            env = dict(os.environ, TILEPICK_POLICY="auto:time_us=" + ("inf" if t == float("inf") else f"{t:g}"))
            subprocess.run([a.cli, "eval", *args, "--no-plot", "--out", out], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            groups = {g["name"]: g for g in json.load(open(os.path.join(out, "eval.json")))["groups"]}
        ops = sorted(n for n, g in groups.items() if " " not in n and n != "all" and not n.startswith("source=")
                     and g["auto"]["count"])
        if not header:
            header = True
            print("T (us) | " + " | ".join(f"{op}: mean p10 min tw timed" for op in ops))
        cells = []
        for op in ops:
            s = groups[op]["auto"]
            cells.append(" ".join(f"{100 * s[k]:5.1f}" for k in ("mean", "p10", "min", "time_weighted"))
                         + f" {100 * groups[op]['auto_timed_share']:4.0f}%")
        print(f"{t:6g} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
