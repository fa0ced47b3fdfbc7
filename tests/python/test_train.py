"""Training pipeline: grouping, folds, score direction, and a small end-to-end run on records made
by the sweep's fake backend (hash timings), so it needs no GPU."""
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tilepick import _core, train

CLI = os.environ.get("TILEPICK_CLI")


def fake_sweep(tmp_path, lines, sample, arch="h200"):
    """A problem file of `lines` and its fake-backend sweep records: (problems path, records path)."""
    problems = tmp_path / "p.txt"
    problems.write_text("\n".join(lines) + "\n")
    records = tmp_path / "r.csv.gz"
    subprocess.run([CLI, "sweep", "--backend", "fake", "--arch", arch, "-q", "--sample", str(sample), "-f", str(problems),
                    "-o", str(records)], check=True, capture_output=True)
    return problems, records


def test_dtype_family_and_groups():
    assert train.dtype_family("gemm rcr m8 n8 k8 bf16") == "half"
    assert train.dtype_family("fwd g1 mb1 ic8 ih5 iw5 oc8 kh3 kw3 sh1 sw1 ph1 pw1 f16") == "half"
    assert train.dtype_family("gemm rcr m8 n8 k8 f32") == "tf32"
    assert train.dtype_family("gemm rcr m8 n8 k8 e4m3:e4m3:bf16") == "fp8"
    assert train.cv_group("gemm rcr m1 n2 k3 bf16", "llama3_8b.qkv.t1") == "llama3_8b"
    # a synthetic shape swept in two dtypes is one group (otherwise its twin leaks into the other folds)
    assert train.cv_group("gemm rcr m1 n2 k3 bf16", "synth_gemm.r1") == "shape:gemm rcr m1 n2 k3"
    assert train.cv_group("gemm rcr m1 n2 k3 f16", None) == "shape:gemm rcr m1 n2 k3"
    assert train.cv_group("gemm rcr m1 n2 k3 bf16:bf16:f32 ep=relu", None) == "shape:gemm rcr m1 n2 k3 ep=relu"


def test_problem_share_is_stable_and_keeps_dtypes_together():
    probs = pd.Series([f"fwd g1 mb{i} ic8 ih5 iw5 oc8 kh3 kw3 sh1 sw1 ph1 pw1 {d}" for i in range(2000)
                       for d in ("bf16", "f16")])
    keep = train.keep_share(probs, 0.3)
    assert 0.27 < keep.mean() < 0.33
    assert (keep[::2] == keep[1::2]).all()
    assert (train.keep_share(probs, 0.3) == keep).all()
    assert not (keep & ~train.keep_share(probs, 0.6)).any()  # a larger share holds the smaller one
    assert train.keep_share(probs, 1.0).all()


def test_folds_keep_whole_groups_and_balance():
    groups = pd.Series(["a"] * 50 + ["b"] * 30 + ["c"] * 30 + ["d"] * 10 + [f"s{i}" for i in range(40)])
    folds = train.fold_of(groups)
    for g in groups.unique():
        assert len(set(folds[groups == g])) == 1, g
    counts = np.bincount(folds, minlength=train.FOLDS)
    # greedy largest-first: the fold with the 50-row network gets nothing else, the rest share 110 rows
    assert counts.max() == 50 and counts.min() >= 25


def test_negated_model_predicts_the_negation():
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 5))
    y = X[:, 0] * 2 - X[:, 1] + rng.normal(scale=0.1, size=400)
    m = lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 7, "seed": 1}, lgb.Dataset(X, y), 20)
    neg = lgb.Booster(model_str=train.negate_leaves(m.model_to_string()))
    assert np.array_equal(neg.predict(X), -m.predict(X))


def test_efficiency_picks_the_argmax_and_ties_by_config():
    df = pd.DataFrame({"problem": ["p"] * 3 + ["q"] * 2, "config": ["a", "b", "c", "a", "b"],
                       "median_us": [10.0, 8.0, 20.0, 5.0, 5.05]})
    e = train.efficiency(df, np.array([1.0, 0.5, 0.0, 2.0, 2.0]))
    assert e.loc["p", "eff"] == pytest.approx(0.8)
    assert not e.loc["p", "top1"] and e.loc["p", "top5"]
    assert e.loc["q", "eff"] == 1.0 and e.loc["q", "top1"]


@pytest.mark.skipif(not CLI, reason="needs TILEPICK_CLI")
def test_end_to_end_on_fake_sweep(tmp_path):
    lines = []
    for i, (m, n, k) in enumerate([(64, 64, 4096), (4096, 4096, 256), (1, 4096, 4096), (512, 1024, 768),
                                   (33, 200, 640), (2048, 128, 128), (96, 96, 96), (7, 8192, 1024)]):
        lines.append(f"net{i % 4}.l{i}: gemm rcr m{m} n{n} k{k} bf16")
    problems, records = fake_sweep(tmp_path, lines, 24)
    out = tmp_path / "models"
    rc = train.main([str(records), "--val", str(records), "--problems-file", str(problems), "--out", str(out),
                     "--objectives", "reg_rel", "reg_tflops", "--param", "num_leaves=15"])
    assert rc == 0
    folder = out / "gemm_half_h200"
    spec = json.loads((folder / "feature_spec.json").read_text())
    assert spec["feature_names"] == list(_core.feature_names())
    assert spec["schema_hash"] == _core.feature_schema_hash()
    assert spec["space_hash"] == _core.config_space_hash("gemm")
    assert spec["score"] == "higher_is_better" and spec["objective"] in ("reg_rel", "reg_tflops")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["rows"] > 100 and set(manifest["cv"]) == {"reg_rel", "reg_tflops"}
    assert manifest["params"]["num_leaves"] == 15 and manifest["params"]["learning_rate"] == 0.08
    assert 0 < manifest["validation"]["mean"] <= 1
    text = gzip.open(folder / "model.txt.gz", "rt").read()
    assert text.startswith("tree") and "feature_names=" in text


@pytest.mark.skipif(not CLI, reason="needs TILEPICK_CLI")
def test_objectives_compared_on_the_same_folds_in_parallel_and_into_existing_manifests(tmp_path, monkeypatch):
    lines = [f"net{i % 5}.l{i}: gemm rcr m{m} n{n} k{k} bf16"
             for i, (m, n, k) in enumerate([(64, 64, 4096), (4096, 4096, 256), (1, 4096, 4096), (512, 1024, 768),
                                            (33, 200, 640), (96, 96, 96), (2048, 128, 128), (7, 8192, 1024),
                                            (300, 300, 300), (128, 4096, 64)])]
    problems, records = fake_sweep(tmp_path, lines, 16)
    out = tmp_path / "models"
    quick = ["--param", "num_leaves=7", "--patience", "5"]
    common = [str(records), "--problems-file", str(problems), "--out", str(out), "--bag", "1", *quick]
    assert train.main(common + ["--objectives", "reg_rel"]) == 0
    folder = out / "gemm_half_h200"
    booster = (folder / "model.txt.gz").read_bytes()
    assert set(json.loads((folder / "manifest.json").read_text())["cv"]) == {"reg_rel"}

    # by default all three objectives are compared; --compare-only writes them beside the booster
    assert train.DEFAULT_OBJECTIVES == train.OBJECTIVES
    assert train.main(common + ["--compare-only", "--jobs", "3", "--threads", "3"]) == 0
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["cv"]) == set(train.OBJECTIVES)
    for c in manifest["cv"].values():
        assert 0 < c["min"] <= c["mean"] <= 1 and c["problems"] == len(lines)
    compared = manifest["cv_compared"]
    assert compared["best"] in train.OBJECTIVES and compared["model_objective"] == "reg_rel"
    assert compared["jobs"] == 3 and compared["folds"] == train.FOLDS
    assert (folder / "model.txt.gz").read_bytes() == booster  # the booster is untouched

    # parallel folds are the serial ones: one thread per booster either way gives the same numbers
    _, raw = train.load_rows([str(records)], [str(problems)])
    df = train.add_targets(raw)
    X = train.compute_features(df, "h200")
    monkeypatch.setattr(train, "THREADS", 1)
    monkeypatch.setattr(train, "PATIENCE_OVERRIDE", 5)
    monkeypatch.setattr(train, "PARAM_OVERRIDES", {"num_leaves": 7})
    serial = train.cross_validate_all(X, df, ["reg_rel", "lambdarank"], 7, bag=2)
    parallel = train.cross_validate_all(X, df, ["reg_rel", "lambdarank"], 7, bag=2, jobs=4)
    assert serial == parallel
    assert serial["reg_rel"] == train.cross_validate(X, df, "reg_rel", 7, bag=2)

    with pytest.raises(SystemExit, match="does not exist"):
        train.main([str(records), "--problems-file", str(problems), "--out", str(tmp_path / "none"), "--compare-only",
                    "--objectives", "reg_rel", "--bag", "1", *quick])
    with pytest.raises(SystemExit):
        train.main(common + ["--jobs", "0"])


def test_a_model_for_an_arch_with_an_underscore_and_records_of_another_arch_refused(tmp_path):
    lines = [f"net{i % 3}.l{i}: gemm rcr m{m} n{n} k{k} f32"
             for i, (m, n, k) in enumerate([(64, 64, 4096), (4096, 4096, 256), (1, 4096, 4096), (512, 1024, 768),
                                            (33, 200, 640), (96, 96, 96)])]
    problems, records = fake_sweep(tmp_path, lines, 16, arch="h100_sxm")
    out = tmp_path / "models"
    common = [str(records), "--problems-file", str(problems), "--out", str(out), "--param", "num_leaves=7",
              "--bag", "1", "--patience", "5"]
    with pytest.raises(SystemExit):  # h200 features for records measured on an H100
        train.main(common)
    assert not out.exists()
    assert train.main(common + ["--arch", "h100_sxm"]) == 0
    spec = json.loads((out / "gemm_tf32_h100_sxm" / "feature_spec.json").read_text())
    assert (spec["op"], spec["dtype_family"], spec["arch"]) == ("gemm", "tf32", "h100_sxm")
    assert train.split_name("conv_bwd_data_half_h100_sxm", "h100_sxm") == ("conv_bwd_data", "half")
    with pytest.raises(ValueError, match="does not end with its arch"):
        train.split_name("gemm_half_h200", "h100_sxm")


def test_a_remeasured_problem_keeps_only_its_remeasured_records(tmp_path):
    shapes = ["gemm rcr m64 n64 k4096 bf16", "gemm rcr m96 n96 k96 bf16", "gemm rcr m33 n200 k640 bf16"]
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    problems, old = fake_sweep(tmp_path / "old", shapes, 24)
    _, new = fake_sweep(tmp_path / "new", shapes[:1], 8)
    _, plain = train.load_rows([str(old)], [str(problems)])
    _, mixed = train.load_rows([str(old)], [str(problems)], remeasured=[str(new)])
    first = mixed[mixed["problem"] == shapes[0]]
    assert len(first) > 0 and (first["source"] == str(new)).all()
    assert len(first) < (plain["problem"] == shapes[0]).sum()  # the old file's other configs are gone too
    rest = mixed[mixed["problem"] != shapes[0]]
    assert (rest["source"] == str(old)).all() and len(rest) == (plain["problem"] != shapes[0]).sum()


def test_param_overrides_take_known_numeric_settings_only():
    assert train.parse_param("num_leaves=63") == ("num_leaves", 63)
    assert train.parse_param("learning_rate=0.05") == ("learning_rate", 0.05)
    for bad in ("num_leaves", "leaves=63", "num_leaves=many"):
        with pytest.raises(Exception, match=bad.split("=")[0]):
            train.parse_param(bad)


def test_merged_model_scores_the_sum_of_its_parts():
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] - np.sin(X[:, 1])
    parts = [lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 5, "seed": s, "bagging_fraction": 0.7,
                        "bagging_freq": 1}, lgb.Dataset(X, y), 15) for s in (1, 2, 3)]
    merged = lgb.Booster(model_str=train.merge_models([m.model_to_string() for m in parts]))
    assert merged.num_trees() == 45
    assert np.allclose(merged.predict(X), sum(m.predict(X) for m in parts), rtol=0, atol=1e-12)


def test_written_models_drop_training_statistics_and_predict_the_same(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 5))
    model = lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 9}, lgb.Dataset(X, X[:, 0] * X[:, 2]), 20)
    text = model.model_to_string()
    train.write_text_gz(tmp_path / "m.txt.gz", text)
    written = gzip.open(tmp_path / "m.txt.gz", "rt").read()
    assert "internal_value=" in text and not any(k in written for k in train.TRAINING_ONLY_KEYS)
    assert len(written) < 0.8 * len(text)
    assert np.array_equal(lgb.Booster(model_str=written).predict(X), model.predict(X))
    assert np.array_equal(np.asarray(_core.gbdt_predict(str(tmp_path / "m.txt.gz"), X)), model.predict(X, raw_score=True))


@pytest.mark.skipif(not CLI, reason="needs TILEPICK_CLI")
def test_retraining_keeps_what_other_tools_set_and_drops_the_old_held_out_numbers(tmp_path):
    lines = [f"net{i % 3}.l{i}: gemm rcr m{m} n{n} k{k} bf16"
             for i, (m, n, k) in enumerate([(64, 64, 4096), (4096, 4096, 256), (1, 4096, 4096), (512, 1024, 768),
                                            (33, 200, 640), (96, 96, 96)])]
    problems, records = fake_sweep(tmp_path, lines, 12)
    out = tmp_path / "models"
    args = [str(records), "--problems-file", str(problems), "--out", str(out), "--bag", "1"]
    assert train.main(args) == 0
    folder = out / "gemm_half_h200"
    spec = json.loads((folder / "feature_spec.json").read_text())
    vc = {"model_file": "../vc.txt.gz", "threshold": 0.03}
    (folder / "feature_spec.json").write_text(json.dumps({**spec, "serves": ["h100_sxm"], "vendor_first": True,
                                                          "vendor_choice": vc}))
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "eval": {"mean": 0.9}, "serves_eval": {},
                                                      "vendor_choice": {"threshold": 0.03}}))
    assert train.main(args) == 0
    spec = json.loads((folder / "feature_spec.json").read_text())
    assert spec["serves"] == ["h100_sxm"] and spec["vendor_first"] is True and spec["vendor_choice"] == vc
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["vendor_choice"] == {"threshold": 0.03}
    assert "eval" not in manifest and "serves_eval" not in manifest  # they measured the old booster


def test_stamp_eval_copies_each_models_held_out_numbers(tmp_path):
    for name in ("gemm_half_h200", "conv_fwd_half_h200"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text(json.dumps({"rows": 1}))
        (tmp_path / name / "feature_spec.json").write_text(json.dumps({"arch": "h200", "serves": ["h100_sxm"]}))
    stats = {"mean": 0.97123456, "p10": 0.9, "min": 0.8, "median": 0.99}
    report = {"arch": "h200", "records": ["v.csv.gz"], "groups": [{"name": "all", "model": stats},
                                                                  {"name": "source=model:gemm_half_h200", "model": stats}]}
    (tmp_path / "eval.json").write_text(json.dumps(report))
    assert train.main(["--stamp-eval", str(tmp_path / "eval.json"), "--out", str(tmp_path)]) == 0
    gemm = json.loads((tmp_path / "gemm_half_h200" / "manifest.json").read_text())
    assert gemm["eval"] == {"mean": 0.971235, "p10": 0.9, "min": 0.8} and gemm["eval_records"] == ["v.csv.gz"]
    assert "eval" not in json.loads((tmp_path / "conv_fwd_half_h200" / "manifest.json").read_text())
    # Records of a device the model serves: its own floors stay, that arch gets its own.
    other = {**report, "arch": "h100_sxm", "records": ["h100.csv.gz"],
             "groups": [{"name": "source=model:gemm_half_h200", "model": {**stats, "mean": 0.95}}]}
    (tmp_path / "eval.json").write_text(json.dumps(other))
    assert train.main(["--stamp-eval", str(tmp_path / "eval.json"), "--out", str(tmp_path)]) == 0
    gemm = json.loads((tmp_path / "gemm_half_h200" / "manifest.json").read_text())
    assert gemm["eval"]["mean"] == 0.971235
    assert gemm["serves_eval"] == {"h100_sxm": {"mean": 0.95, "p10": 0.9, "min": 0.8, "records": ["h100.csv.gz"]}}


def test_stamp_eval_records_the_vendor_comparison_and_vendor_first_is_set_per_folder(tmp_path):
    folder = tmp_path / "gemm_tf32_h100_sxm"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"rows": 1}))
    (folder / "feature_spec.json").write_text(json.dumps({"arch": "h100_sxm"}))
    stats = {"mean": 0.97, "p10": 0.9, "min": 0.8}
    report = {"arch": "h100_sxm", "records": ["t.csv.gz"],
              "groups": [{"name": "source=model:gemm_tf32_h100_sxm", "model": stats}]}
    (tmp_path / "eval.json").write_text(json.dumps(report))
    src = "model:gemm_tf32_h100_sxm"
    # model / vendor times 2, 0.5, 2 (geomean 2^(1/3)); a problem without a vendor timing or without the model's
    # own first choice measured does not count
    pd.DataFrame({"source": [src] * 5, "own_first_measured": [1, 1, 1, 1, 0],
                  "own_first_us": [20.0, 5.0, 40.0, 7.0, 9.0], "vendor_heur_us": [10.0, 10.0, 20.0, np.nan, 1.0]}
                 ).to_csv(tmp_path / "eval.csv", index=False)
    assert train.main(["--stamp-eval", str(tmp_path / "eval.json"), "--out", str(tmp_path)]) == 0
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["vendor_vs_model"]["h100_sxm"] == {"problems": 3, "vendor_speedup_geomean": round(2 ** (1 / 3), 4),
                                                       "vendor_faster_share": round(2 / 3, 4), "records": ["t.csv.gz"]}
    assert "vendor_first" not in json.loads((folder / "feature_spec.json").read_text())  # stamping decides nothing
    assert train.main(["--vendor-first", "on", "--only", folder.name, "--out", str(tmp_path)]) == 0
    assert json.loads((folder / "feature_spec.json").read_text())["vendor_first"] is True
    assert train.main(["--vendor-first", "off", "--only", folder.name, "--out", str(tmp_path)]) == 0
    assert "vendor_first" not in json.loads((folder / "feature_spec.json").read_text())
    for bad in ([], ["--only", "gemm_half_h200"]):  # no folder named, or one that does not exist
        with pytest.raises(SystemExit):
            train.main(["--vendor-first", "on", "--out", str(tmp_path), *bad])


def test_add_serves_lists_arch_specs_once_and_refuses_unknown_ones(tmp_path):
    for name in ("gemm_half_h200", "conv_fwd_half_h200"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "feature_spec.json").write_text(json.dumps({"arch": "h200", "op": "gemm"}))
    out = ["--out", str(tmp_path)]
    assert train.main(["--add-serves", "h100_sxm", "h200", "--only", "gemm_half_h200"] + out) == 0
    assert train.main(["--add-serves", "h100_sxm"] + out) == 0
    gemm = json.loads((tmp_path / "gemm_half_h200" / "feature_spec.json").read_text())
    conv = json.loads((tmp_path / "conv_fwd_half_h200" / "feature_spec.json").read_text())
    assert gemm["serves"] == ["h100_sxm"] and conv["serves"] == ["h100_sxm"]  # once; never its own arch
    with pytest.raises(ValueError, match="'h999' is not an arch spec"):
        train.main(["--add-serves", "h999"] + out)


@pytest.mark.skipif(not CLI, reason="needs TILEPICK_CLI")
def test_pooled_conv_model_is_written_for_every_direction(tmp_path):
    lines = []
    for i, (c, hw, k) in enumerate([(16, 14, 32), (32, 28, 64), (64, 7, 64), (8, 56, 16), (128, 14, 128), (24, 9, 48)]):
        for d in ("fwd", "bwd_data", "bwd_weight"):
            lines.append(f"net{i % 3}.l{i}.{d}: {d} g1 mb4 ic{c} ih{hw} iw{hw} oc{k} kh3 kw3 sh1 sw1 ph1 pw1 bf16")
    problems, records = fake_sweep(tmp_path, lines, 12)
    out = tmp_path / "models"
    assert train.main([str(records), "--problems-file", str(problems), "--out", str(out), "--bag", "2"]) == 0
    names = ["conv_fwd_half_h200", "conv_bwd_data_half_h200", "conv_bwd_weight_half_h200"]
    # One model (the op is a feature), stored once and named by every direction's feature_spec.
    assert {train.model_file(out / n) for n in names} == {out / "conv_half_h200.model.txt.gz"}
    assert not any((out / n / "model.txt.gz").exists() for n in names)
    versions = {_core.model_version(str(out / n)).split("@")[1] for n in names}  # the C++ loader resolves it too
    assert len(versions) == 1 and len(versions.pop()) == 16
    for n in names:
        op = n.rsplit("_", 2)[0]
        assert json.loads((out / n / "feature_spec.json").read_text())["op"] == op
        manifest = json.loads((out / n / "manifest.json").read_text())
        assert manifest["bag"] == 2 and manifest["cv"]["reg_rel"]["problems"] == 6
        assert set(manifest["trained_with"]) == {"conv_fwd", "conv_bwd_data", "conv_bwd_weight"}
        assert manifest["trained_with"][op] == manifest["rows"] > 0


def test_early_stopping_uses_the_ops_patience(monkeypatch):
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(5)
    n = 400
    X = rng.normal(size=(n, len(_core.feature_names())))
    df = pd.DataFrame({"op": "gemm", "group": [f"g{i % 40}" for i in range(n)], "y_rel": rng.normal(size=n),
                       "y_tflops": 0.0, "y_rank": 0, "eff": 1.0})
    asked = []
    real = lgb.early_stopping
    monkeypatch.setattr(lgb, "early_stopping", lambda n, **kw: asked.append(n) or real(n, **kw))
    for op, override, expect in (("gemm", None, train.PATIENCE["gemm"]), ("conv_fwd", None, train.PATIENCE["conv"]),
                                 ("gemm", 7, 7)):
        monkeypatch.setattr(train, "PATIENCE_OVERRIDE", override)
        b = train.fit(X, df.assign(op=op), "reg_rel", seed=3)
        assert asked[-1] == expect and 0 < b.best_iteration < train.MAX_ROUNDS
    assert train.PATIENCE["gemm"] != train.PATIENCE["conv"]
    with pytest.raises(SystemExit):
        train.main(["r.csv.gz", "--patience", "0"])


def test_rank_stop_metric_and_fixed_rounds(monkeypatch):
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(9)
    n = 600
    X = rng.normal(size=(n, len(_core.feature_names())))
    eff = rng.uniform(0.3, 1.0, size=n)
    df = pd.DataFrame({"op": "gemm", "problem": [f"p{i // 20}" for i in range(n)], "group": [f"g{i // 40}" for i in range(n)],
                       "y_rel": -np.log(eff), "y_tflops": 0.0, "y_rank": np.floor(30 * eff ** 4).astype(int), "eff": eff})
    monkeypatch.setattr(train, "PATIENCE_OVERRIDE", 5)
    # the default watches NDCG@1 and @5 of the inner split; --rank-stop-at 5 watches @5 alone
    assert set(train.fit(X, df, "lambdarank", seed=3).best_score["valid_0"]) == {"ndcg@1", "ndcg@5"}
    monkeypatch.setattr(train, "RANK_EVAL_AT", (5,))
    assert train.params_for("lambdarank", 3)["eval_at"] == [5]
    assert set(train.fit(X, df, "lambdarank", seed=3).best_score["valid_0"]) == {"ndcg@5"}
    # fixed rounds: no inner split, no early stopping, exactly that many trees
    monkeypatch.setattr(train, "FIXED_ROUNDS", 17)
    monkeypatch.setattr(lgb, "early_stopping", lambda *a, **kw: pytest.fail("early stopping with fixed rounds"))
    for objective in ("lambdarank", "reg_rel"):
        assert train.fit(X, df, objective, seed=3).num_trees() == 17
    for flag in ("--rounds", "--rank-stop-at"):
        with pytest.raises(SystemExit):
            train.main(["r.csv.gz", flag, "0"])


def test_every_shipped_model_kept_the_best_of_three_objectives_compared_on_the_same_folds():
    """The shipped manifests hold each objective's grouped-CV numbers (tilepick.train --compare-only with the model's
    own data and recipe) and the model's objective is the one the trainer's rule keeps (mean, then P10)."""
    models = Path(__file__).resolve().parents[2] / "models"
    manifests = sorted(models.glob("*/manifest.json"))
    assert manifests
    for path in manifests:
        m = json.loads(path.read_text())
        assert set(m["cv"]) == set(train.OBJECTIVES), path
        for o, c in m["cv"].items():
            assert 0 < c["min"] <= c["p10"] <= c["mean"] <= 1 and c["problems"] > 100, (path, o)
        rule = max(m["cv"], key=lambda o: (round(m["cv"][o]["mean"], 4), m["cv"][o]["p10"]))
        assert m["cv_compared"]["best"] == rule == m["objective"], (path, rule, m["objective"])
        assert m["cv_compared"]["folds"] == train.FOLDS and m["cv_compared"]["bag"] == m["bag"], path
