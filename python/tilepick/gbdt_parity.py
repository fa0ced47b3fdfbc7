"""Parity data for the C++ LightGBM evaluator: trains small models, writes model, rows and LightGBM's predictions.

python -m tilepick.gbdt_parity OUTDIR [--rows N]

For each case OUTDIR holds <case>.txt (and <case>.txt.gz), <case>.csv (header = feature names,
'nan' for missing values) and <case>.pred (LightGBM's raw scores, one per line, %.17g). The data
mixes NaNs, exact zeros and values inside LightGBM's zero band so that every missing-value path
(None, Zero, NaN; default left and right) and categorical splits are exercised.
"""
import argparse
import gzip
import os
import shutil

import lightgbm as lgb
import numpy as np

N_FEATURES = 10
CAT_FEATURE = 9  # integer codes 0..39, categorical in the "categorical" case


def make_rows(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, N_FEATURES))
    x[:, 3] = np.round(x[:, 3] * 2)  # many exact zeros and repeated values
    x[rng.random(n) < 0.15, 0] = np.nan
    x[rng.random(n) < 0.25, 1] = 0.0
    x[rng.random(n) < 0.05, 1] = np.nan
    x[rng.random(n) < 0.10, 2] = 1e-40  # inside the zero band: LightGBM reads it as 0
    x[rng.random(n) < 0.30, 4] = 0.0
    x[:, CAT_FEATURE] = rng.integers(0, 40, size=n)
    x[rng.random(n) < 0.03, CAT_FEATURE] = np.nan
    cat_effect = np.sin(np.nan_to_num(x[:, CAT_FEATURE], nan=-1.0) * 1.7)
    y = (np.nan_to_num(x[:, 0], nan=2.0) * 1.5 + np.where(x[:, 1] == 0, 1.0, np.nan_to_num(x[:, 1], nan=-1.0)) - x[:, 2] ** 2 +
         np.abs(x[:, 3]) + 0.5 * x[:, 4] * x[:, 5] + cat_effect + 0.1 * rng.normal(size=n))
    return x, y


def train(case, x, y, seed):
    names = [f"f{i}" for i in range(N_FEATURES)]
    params = {"num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 20, "verbose": -1, "seed": seed,
              "deterministic": True, "num_threads": 2}
    cat = "auto"
    group = None
    if case == "regression":
        params["objective"] = "regression"
    elif case == "regression_zero_missing":
        params.update(objective="regression", zero_as_missing=True)
    elif case == "categorical":
        params.update(objective="regression", cat_smooth=1, min_data_per_group=10, max_cat_to_onehot=4)
        cat = [CAT_FEATURE]
    elif case == "lambdarank":
        params.update(objective="lambdarank", lambdarank_truncation_level=10)
        y = np.clip(np.floor((y - y.min()) / (y.max() - y.min()) * 5), 0, 4).astype(int)
        group = [50] * (len(y) // 50)
        x, y = x[: sum(group)], y[: sum(group)]
    else:
        raise ValueError(f"unknown case {case}")
    data = lgb.Dataset(x, label=y, group=group, feature_name=names, categorical_feature=cat, free_raw_data=False)
    return lgb.train(params, data, num_boost_round=60), names


CASES = ["regression", "regression_zero_missing", "categorical", "lambdarank"]


def write_case(outdir, case, rows, seed):
    x_train, y_train = make_rows(rows, seed)
    booster, names = train(case, x_train, y_train, seed)
    model = os.path.join(outdir, f"{case}.txt")
    booster.save_model(model)
    with open(model, "rb") as src, gzip.open(model + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    x_eval, _ = make_rows(rows, seed + 1000)  # fresh rows, same distribution
    x_eval = np.vstack([x_eval, x_train[: rows // 4]])
    # Predictions of the model as written (what the C++ side reads), as raw scores.
    pred = lgb.Booster(model_file=model).predict(x_eval, raw_score=True)
    np.savetxt(os.path.join(outdir, f"{case}.csv"), x_eval, fmt="%.17g", delimiter=",", header=",".join(names),
               comments="")
    np.savetxt(os.path.join(outdir, f"{case}.pred"), pred, fmt="%.17g")
    return len(x_eval)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--rows", type=int, default=10000, help="training rows per case (evaluation rows: 1.25x)")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    os.makedirs(a.outdir, exist_ok=True)
    for i, case in enumerate(CASES):
        n = write_case(a.outdir, case, a.rows, a.seed + i)
        print(f"{case}: {n} rows")


if __name__ == "__main__":
    main()
