"""tilepick._core (nanobind) against the CLI: the same schema, bit-identical feature rows and GBDT scores."""
import csv
import json
import io
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

try:
    from tilepick import _core
except ImportError as e:  # fail, never skip: CI must build the module (nanobind from requirements.txt)
    raise ImportError(f"tilepick._core is not built ({e}); pip install -r requirements.txt, then re-run cmake "
                      "so that TILEPICK_PYTHON is ON and python/tilepick/_core*.so is built") from e

CLI = os.environ.get("TILEPICK_CLI", "")
needs_cli = pytest.mark.skipif(not CLI, reason="TILEPICK_CLI is not set")
SWEEP = Path(__file__).resolve().parents[2] / "data" / "problems" / "sweep"
OPS = {"gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_weight"}


def cli(*args):
    return subprocess.run([CLI, *args], check=True, capture_output=True, text=True).stdout


def sample_pairs(per_problem=3):
    """Deterministic (problem, config) pairs: every 12th problem of each sweep file (plus every depthwise
    conv among the first 200 lines), each with `per_problem` configs spread over its legal pool."""
    pairs = []
    for path in sorted(SWEEP.glob("*.txt")):
        problems = [p for _, p in _core.problem_file(str(path))]
        chosen = problems[::12] + [p for p in problems[:200] if re.search(r"\bg(\d+)\b.*\bic\1\b.*\boc\1\b", p)][:6]
        for p in dict.fromkeys(chosen):
            pool = _core.legal_configs(p, "h200")
            step = max(1, len(pool) // per_problem)
            pairs += [(p, c) for c in pool[::step][:per_problem]]
    return pairs


@pytest.fixture(scope="module")
def pairs():
    return sample_pairs()


def cli_rows(pairs):
    """Rows printed by `tilepick features --csv`, one CLI call per problem, in the order of `pairs`."""
    by_problem = {}
    for p, c in pairs:
        by_problem.setdefault(p, []).append(c)
    printed = {}
    for p, configs in by_problem.items():
        args = ["features", "--csv", "--arch", "h200", "-p", p]
        for c in configs:
            args += ["-c", c]
        reader = csv.reader(io.StringIO(cli(*args)))
        header = next(reader)
        assert header[2:] == _core.feature_names()
        for row in reader:
            printed[(row[0], row[1])] = [float(v) for v in row[2:]]
    return np.array([printed[(p, c)] for p, c in pairs], dtype=np.float64)


def assert_bit_equal(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype == np.float64
    same_nan = np.isnan(got) == np.isnan(want)
    same_bits = (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))
    bad = np.argwhere(~(same_nan & same_bits))
    assert bad.size == 0, f"{len(bad)} cells differ, first at {tuple(bad[0])}: {got[tuple(bad[0])]!r} vs " \
                          f"{want[tuple(bad[0])]!r}"


def test_schema_matches_the_cli():
    names = _core.feature_names()
    assert len(names) == len(set(names)) > 20
    assert re.fullmatch(r"[0-9a-f]{16}", _core.feature_schema_hash())
    assert isinstance(_core.feature_version(), int) and _core.feature_version() >= 1
    if not CLI:
        pytest.skip("TILEPICK_CLI is not set")
    lines = cli("features", "--schema").splitlines()
    m = re.fullmatch(r"# feature schema ([0-9a-f]{16}) version (\d+), (\d+) features", lines[0])
    assert m, lines[0]
    assert m.group(1) == _core.feature_schema_hash()
    assert int(m.group(2)) == _core.feature_version()
    assert lines[1:] == names and int(m.group(3)) == len(names)


def test_sample_covers_every_op_and_depthwise(pairs):
    assert len(pairs) >= 200
    assert {_core.problem_op(p) for p, _ in pairs} == OPS
    depthwise = [p for p, _ in pairs if re.search(r"\bg(\d+)\b.*\bic\1\b.*\boc\1\b", p)]
    assert {_core.problem_op(p) for p in depthwise} == OPS - {"gemm"}
    assert len({c.split()[0] for _, c in pairs}) >= 2, "configs of one family only"


@needs_cli
def test_features_batch_equals_the_cli_bit_for_bit(pairs):
    problems, configs = [p for p, _ in pairs], [c for _, c in pairs]
    got = _core.features_batch(problems, configs, "h200")
    assert got.shape == (len(pairs), len(_core.feature_names()))
    assert_bit_equal(got, cli_rows(pairs))
    # The thread count does not change a bit.
    assert_bit_equal(_core.features_batch(problems, configs, "h200", threads=1), got)
    assert_bit_equal(_core.features_batch(problems, configs, "h200", threads=3), got)


def test_features_batch_edge_cases():
    empty = _core.features_batch([], [], "h200")
    assert empty.shape == (0, len(_core.feature_names())) and empty.dtype == np.float64
    p = "gemm rcr m128 n256 k512 bf16"
    c = _core.legal_configs(p, "h200")[0]
    one = _core.features_batch([p], [c], "h200")
    names = _core.feature_names()
    assert one.shape == (1, len(names)) and one.flags.c_contiguous and one.flags.writeable


def test_errors_raise_value_error_naming_the_token():
    p = "gemm rcr m128 n256 k512 bf16"
    c = _core.legal_configs(p, "h200")[0]
    with pytest.raises(ValueError, match="zork"):
        _core.features_batch(["gemm rcr m128 n256 k512 zork"], [c], "h200")
    with pytest.raises(ValueError, match="zork"):
        _core.canonical_problem("gemm rcr m128 zork k512 bf16")
    with pytest.raises(ValueError, match="frobnicate"):
        _core.features_batch([p], [c + " frobnicate=3"], "h200")
    with pytest.raises(ValueError, match="2 problems but 1 configs"):
        _core.features_batch([p, p], [c], "h200")
    with pytest.raises(ValueError, match="nosucharch"):
        _core.features_batch([p], [c], "nosucharch")
    with pytest.raises(ValueError):
        _core.legal_configs("conv nonsense", "h200")
    with pytest.raises(TypeError):
        _core.features_batch(p, [c], "h200")  # a str is not a list of problems


def test_strings_ops_and_legal_configs():
    assert _core.canonical_problem("gemm  rcr m128 n256 k512 bf16") == "gemm rcr m128 n256 k512 bf16"
    ops = set()
    for path in sorted(SWEEP.glob("*.txt")):
        for _, p in _core.problem_file(str(path))[::40]:
            assert _core.canonical_problem(p) == p
            ops.add(_core.problem_op(p))
            pool = _core.legal_configs(p, "h200")
            assert pool, f"no legal config for {p}"
            assert len(set(pool)) == len(pool)
            assert all(_core.canonical_config(c) == c for c in pool)
    assert ops == OPS


@needs_cli
def test_legal_configs_match_the_cli_space_all():
    p = "gemm rcr m1000 n512 k256 f16"
    printed = [row[1] for row in list(csv.reader(io.StringIO(cli("features", "--csv", "-p", p, "--space", "all"))))[1:]]
    assert _core.legal_configs(p, "h200") == printed


def test_heuristic_scores():
    p = "gemm rcr m4096 n4096 k4096 bf16"
    pool = _core.legal_configs(p, "h200")
    scores = _core.heuristic_scores(p, pool, "h200")
    assert scores.shape == (len(pool),) and scores.dtype == np.float64
    assert np.all(np.isfinite(scores)) and np.all(scores > 0) and np.ptp(scores) > 0
    assert np.array_equal(_core.heuristic_scores(p, pool[::-1], "h200"), scores[::-1])
    # estimated_time_us is the same model's time: score x time = the problem's flops (2 x 4096^3, in TFLOP x us)
    times = _core.estimated_times(p, pool, "h200")
    assert np.allclose(times * scores, 2 * 4096.0**3 * 1e-6, rtol=1e-12)


@needs_cli
def test_gbdt_predict_equals_the_cli(pairs, tmp_path):
    lightgbm = pytest.importorskip("lightgbm")
    names = _core.feature_names()
    rows = _core.features_batch([p for p, _ in pairs], [c for _, c in pairs], "h200")
    rng = np.random.default_rng(7)
    label = rows @ rng.normal(size=rows.shape[1]) / np.maximum(np.abs(rows).max(axis=0), 1).sum()
    label = np.nan_to_num(label) + rng.normal(scale=0.01, size=len(rows))
    model = lightgbm.train({"objective": "regression", "num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1,
                            "deterministic": True, "num_threads": 1},
                           lightgbm.Dataset(rows, label=label, feature_name=names), num_boost_round=20)
    path = tmp_path / "model.txt"
    model.save_model(str(path))

    got = _core.gbdt_predict(str(path), rows)
    data = tmp_path / "rows.csv"
    data.write_text(",".join(names) + "\n" + "".join(",".join(repr(float(v)) for v in r) + "\n" for r in rows))
    subprocess.run([CLI, "gbdt", "predict", "--model", str(path), "--data", str(data), "--out",
                    str(tmp_path / "pred")], check=True)
    want = np.loadtxt(tmp_path / "pred")
    assert got.shape == (len(rows),) and np.array_equal(got, want)
    lgb = model.predict(rows, raw_score=True)
    assert np.allclose(got, lgb, rtol=1e-9, atol=1e-12)
    assert np.ptp(got) > 0, "a constant model tests little"
    # Non-contiguous or float32 input is converted; a wrong column count names both counts.
    assert np.array_equal(_core.gbdt_predict(str(path), np.asfortranarray(rows)), got)
    with pytest.raises(ValueError, match=f"{rows.shape[1] - 1} columns but the model has {rows.shape[1]}"):
        _core.gbdt_predict(str(path), rows[:, 1:])
    with pytest.raises(ValueError, match="nosuchmodel"):
        _core.gbdt_predict(str(tmp_path / "nosuchmodel.txt"), rows)


def test_calls_from_threads_agree(pairs):
    """features_batch releases the GIL; concurrent calls give the same rows as one call."""
    from concurrent.futures import ThreadPoolExecutor
    problems, configs = [p for p, _ in pairs], [c for _, c in pairs]
    want = _core.features_batch(problems, configs, "h200", threads=1)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: _core.features_batch(problems, configs, "h200", threads=t), [1, 2, 1, 2]))
    for got in results:
        assert_bit_equal(got, want)


@needs_cli
def test_config_space_hash_recomputed_from_the_registry_export():
    spaces = json.loads(cli("registry", "export", "--arch", "h200"))["spaces"]

    # src/core/hash.hpp's offset basis is 1469598103934665603, not FNV's 14695981039346656037 (a digit
    # short); every tilepick hash uses it, so the recomputation does too.
    def fnv1a64(data, h=1469598103934665603):
        for b in data:
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        return h

    for op in sorted(OPS):
        lines = [f"{s['name']} {s['hash']}\n" for s in sorted(spaces, key=lambda s: s['name']) if op in s['ops']]
        assert lines, op
        assert _core.config_space_hash(op) == f"{fnv1a64(''.join(lines).encode()):016x}"
    assert _core.config_space_hash("conv_fwd") != _core.config_space_hash("gemm")
    with pytest.raises(ValueError, match="conv_sideways"):
        _core.config_space_hash("conv_sideways")


def test_tile_shape_is_the_shortlists_key():
    # stages, split-K and swizzle leave the shape alone; tile, warps and the dw tile change it
    base = "fam=sm80 tile=64x128x32 warps=2x2 stages=4 splitk=1 skmode=serial raster=row swz=1 align=8x8x8 epi=direct"
    assert _core.tile_shape(base) == _core.tile_shape(base.replace("stages=4", "stages=3").replace("swz=1", "swz=8"))
    assert _core.tile_shape(base) != _core.tile_shape(base.replace("warps=2x2", "warps=1x4"))
    dw = "fam=dw splitk=1 dwtile=4x16x64 ppt=8 cpt=8"
    assert _core.tile_shape(dw) == _core.tile_shape(dw.replace("ppt=8 cpt=8", "ppt=16 cpt=4"))
    assert _core.tile_shape(dw) != _core.tile_shape(dw.replace("4x16x64", "8x16x64"))
    with pytest.raises(ValueError):
        _core.tile_shape("fam=sm80 tile=banana")
