"""The C++ LightGBM evaluator (tilepick gbdt predict) against LightGBM's own predictions."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tilepick import gbdt_parity

CLI = os.environ.get("TILEPICK_CLI", "")


@pytest.fixture(scope="module")
def parity_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("gbdt_parity")
    gbdt_parity.main([str(out), "--rows", "10000"])
    return out


def decision_types(model_text):
    out = set()
    for line in model_text.splitlines():
        if line.startswith("decision_type="):
            out.update(int(v) for v in line.split("=", 1)[1].split())
    return out


def test_models_exercise_every_split_kind(parity_dir):
    kinds = set()
    for case in gbdt_parity.CASES:
        kinds |= decision_types((parity_dir / f"{case}.txt").read_text())
    missing = {(d >> 2) & 3 for d in kinds if not d & 1}
    assert missing >= {0, 1, 2}, f"missing types None/Zero/NaN not all present: {sorted(kinds)}"
    assert any(d & 1 for d in kinds), "no categorical split"
    assert any(d & 2 for d in kinds) and any(not d & 2 and not d & 1 for d in kinds), "default left/right"


def expect_cpp_matches_lightgbm(parity_dir, case, model, out, *extra):
    """`tilepick gbdt predict` of `model` on the case's rows against LightGBM's, within 1e-9 relative."""
    subprocess.run([CLI, "gbdt", "predict", "--model", str(parity_dir / model), "--data",
                    str(parity_dir / f"{case}.csv"), "--out", str(out), *extra], check=True)
    want = np.loadtxt(parity_dir / f"{case}.pred")
    got = np.loadtxt(out)
    assert len(want) >= 10000 and got.shape == want.shape
    rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
    assert rel.max() <= 1e-9, f"{model} {extra}: max relative difference {rel.max():.3g} at row {rel.argmax()}"


@pytest.mark.skipif(not CLI, reason="TILEPICK_CLI is not set")
@pytest.mark.parametrize("case", gbdt_parity.CASES)
@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_cpp_matches_lightgbm(parity_dir, case, suffix):
    expect_cpp_matches_lightgbm(parity_dir, case, f"{case}{suffix}", parity_dir / f"{case}{suffix}.cpp.pred")


# The rank form (byte compares of each value's rank among its column's thresholds) on LightGBM's own
# models: the cases without categorical or zero-missing splits have one, and it matches bit for bit.
@pytest.mark.skipif(not CLI, reason="TILEPICK_CLI is not set")
@pytest.mark.parametrize("case", ["regression", "lambdarank"])
@pytest.mark.parametrize("form", ["values", "ranks"])
def test_cpp_forms_match_lightgbm(parity_dir, case, form):
    expect_cpp_matches_lightgbm(parity_dir, case, f"{case}.txt", parity_dir / f"{case}.{form}.pred", "--form", form)


@pytest.mark.skipif(not CLI, reason="TILEPICK_CLI is not set")
def test_cpp_refuses_ranks_without_a_rank_form(parity_dir, tmp_path):
    r = subprocess.run([CLI, "gbdt", "predict", "--model", str(parity_dir / "categorical.txt"), "--data",
                        str(parity_dir / "categorical.csv"), "--out", str(tmp_path / "p"), "--form", "ranks"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "has no rank form" in r.stderr


@pytest.mark.skipif(not CLI, reason="TILEPICK_CLI is not set")
def test_cpp_rejects_a_mismatched_header(parity_dir, tmp_path):
    data = (parity_dir / "regression.csv").read_text().splitlines()
    data[0] = data[0].replace("f3", "g3")
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(data[:5]) + "\n")
    r = subprocess.run([CLI, "gbdt", "predict", "--model", str(parity_dir / "regression.txt"), "--data", str(bad),
                        "--out", str(tmp_path / "p")], capture_output=True, text=True)
    assert r.returncode != 0 and re.search(r"feature 3 is 'f3' but the caller's is 'g3'", r.stderr), r.stderr
