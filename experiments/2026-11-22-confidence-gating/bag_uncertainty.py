"""Does disagreement among the bagged boosters of the pooled conv model find its first-choice misses? For every
conv problem of a `tilepick eval --out DIR` eval.csv, the selector's first 16 are scored by each booster apart
(the model file holds the bag's boosters one after another, `rounds` trees each); per op: Spearman correlations
of the first choice's efficiency with the boosters disagreeing on the argmax, the spread of their margins and
the margin over its spread, and the efficiency when only the least certain share is timed (top_k).

usage: PYTHONPATH=python TILEPICK_MODELS_DIR=$PWD/models python3 experiments/2026-11-22-confidence-gating/bag_uncertainty.py build/eval/eval.csv"""
import gzip
import json
import os
import sys

import lightgbm as lgb
import numpy as np
import pandas as pd

from tilepick import _core

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from confidence_gating import gated  # noqa: E402


def main() -> None:
    ev = pd.read_csv(sys.argv[1] if len(sys.argv) > 1 else 'build/eval/eval.csv')
    ev = ev[ev.op.str.startswith('conv')].reset_index(drop=True)
    text = gzip.open('models/conv_half_h200.model.txt.gz', 'rt').read()
    m = json.load(open('models/conv_fwd_half_h200/manifest.json'))
    R, B = m['rounds'], m['bag']
    bst = lgb.Booster(model_str=text)
    assert bst.num_trees() == R*B, (bst.num_trees(), R, B)
    rows_p, rows_c, owner = [], [], []
    for i, p in enumerate(ev.problem):
        s = _core.select(p, 'h200', 16)
        for t in s['top']:
            rows_p.append(s['problem'])
            rows_c.append(t['config'])
            owner.append(i)
    X = _core.features_batch(rows_p, rows_c, 'h200', 0)
    owner = np.array(owner)
    S = np.stack([bst.predict(X, start_iteration=b*R, num_iteration=R, raw_score=True) for b in range(B)], 1)
    tot = S.sum(1)
    u_dis, u_std, marg = [], [], []
    for i in range(len(ev)):
        k = np.where(owner == i)[0]
        s, t = S[k], tot[k]
        a = np.argmax(t)
        u_dis.append(sum(np.argmax(s[:, b]) != a for b in range(B)))
        # per-booster margin of the ensemble's top over the best other
        mm = [s[a, b] - np.max(np.delete(s[:, b], a)) for b in range(B)]
        u_std.append(np.std(mm))
        marg.append(np.mean(mm))
    ev['dis'], ev['mstd'] = u_dis, u_std
    ev['z'] = np.array(marg) / (np.array(u_std) + 1e-9)
    for op, x in ev.groupby('op'):
        rho = [x[[c, 'efficiency']].corr(method='spearman').iloc[0, 1] for c in ('dis', 'mstd', 'z', 'own_confidence')]
        print(op, 'spearman e1 vs: dis %.2f  mstd %.2f  z %.2f conf %.2f' % tuple(rho))
        print('   e1 mean by #disagreeing boosters:', x.groupby('dis').efficiency.agg(['size', 'mean']).round(3).to_dict('index'))
        for share in (0.25, 0.5):
            for c, asc in (('z', True), ('dis', False)):
                e = gated(x, x[c] if asc else -x[c], share)
                print(f'   gate by {c:3s} time {share:.0%}: mean {e.mean():.1f} P10 {np.percentile(e,10):.1f}')


if __name__ == "__main__":
    main()
