exec(open('bench/results/2026-11-26-h200x4-vendor-choice-more/thresholds.py').read().split("cv = vc.cross")[0])
ht = vc.heldout_table("data/sweeps/h200-graph/recheck_val.csv.gz+data/sweeps/h200-graph/vendor_conv_val.csv.gz")
hX = vc.problem_features(list(ht.problem), "h200")
base = dict(vc.PARAMS); R = vc.ROUNDS
for name, kw, rounds in [("600x63", dict(num_leaves=63), 600), ("1200x31", dict(num_leaves=31), 1200), ("600x31 ff.5", dict(num_leaves=31, feature_fraction=0.5), 600),
                         ("600x31", dict(num_leaves=31), 600), ("1000x31 lr.03", dict(num_leaves=31, learning_rate=0.03), 1000),
                         ("300x15 mdl40", dict(min_data_in_leaf=40), 300)]:
    vc.PARAMS = dict(base, **kw); vc.ROUNDS = rounds
    cv = vc.cross_validated(X, y, groups, 2)
    th, grid = vc.best_threshold(t, cv)
    a = vc.table(t, cv, th)
    m = vc.fit(X, y, 2); b = vc.table(ht, m.predict(hX), th)
    print(f"{name:16s} th {th:5} CV all3 {100*grid[str(th)]:.2f} | " + " ".join(f"{o[5:]} {100*a[o]['choice']['mean']:.1f}/{100*a[o]['choice']['p10']:.1f}/{100*a[o]['choice']['time_weighted']:.1f}" for o in vc.OPS['conv'])
          + " || heldout " + " ".join(f"{o[5:]} {100*b[o]['choice']['mean']:.1f}/{100*b[o]['choice']['p10']:.1f}/{100*b[o]['choice']['time_weighted']:.1f}" for o in vc.OPS['conv']), flush=True)
