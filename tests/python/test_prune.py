"""Pool pruning (python -m tilepick.prune): pool form of configs, near-oracle sets, greedy cover, files."""
import gzip
import json

import pandas as pd
import pytest

from tilepick import prune

CFG = "fam=sm80 tile={t} warps=2x2 stages=3 splitk=1 skmode=serial raster=row swz=1 align={a} epi=direct"
COLUMNS = ("problem,config,status,median_us,iqr_us,reps,tflops,gbps,max_err,rel_err,tol,compile_s,registers,"
           "spills,cached,gpu,time_unix,detail")


def test_pool_config_resets_align_for_sm80_only():
    assert prune.pool_config(CFG.format(t="64x64x32", a="8x8x8")) == CFG.format(t="64x64x32", a="auto")
    dw = "fam=dw splitk=1 dwtile=4x16x16 ppt=8 cpt=2"
    assert prune.pool_config(dw) == dw


def test_greedy_cover_keeps_redundancy_per_problem():
    near = {"p1": {"a": 1.0, "b": 0.98}, "p2": {"a": 0.99, "c": 1.0}, "p3": {"d": 1.0}}
    assert prune.greedy_cover(near, 1) == ["a", "d"]  # "a" serves p1 and p2
    cover = prune.greedy_cover(near, 2)
    assert set(cover) == {"a", "b", "c", "d"}  # p3 has one near-oracle config: it keeps that one
    assert prune.greedy_cover(near, 2) == cover  # deterministic


def test_near_oracle_band_and_covered_efficiency():
    df = pd.DataFrame({"problem": ["p"] * 3, "pool": ["a", "b", "c"], "median_us": [10.0, 10.2, 12.0]})
    assert set(prune.near_oracle(df, 0.03)["p"]) == {"a", "b"}
    e = prune.covered_efficiency(df, {"c"})
    assert e["eff"].iloc[0] == pytest.approx(10.0 / 12.0)
    empty = prune.covered_efficiency(df, {"zzz"})
    assert bool(empty["empty"].iloc[0]) and empty["eff"].iloc[0] == 1.0  # the selector's fallback: whole pool


def write_records(path, rows):
    header = {"format": "tilepick-sweep/1", "device": {"name": "NVIDIA H200"}}
    text = "# " + json.dumps(header) + "\n" + COLUMNS + "\n"
    for problem, config, us in rows:
        text += f"{problem},{config},ok,{us},0.1,50,1,1,0,0,0,0,128,0,0,0,0,\n"
    with gzip.open(path, "wt") as f:
        f.write(text)


def test_main_writes_candidates_and_refuses_held_out(tmp_path):
    gemm = ["gemm rcr m128 n128 k128 bf16", "gemm rcr m256 n256 k256 bf16"]
    rows = []
    for i, p in enumerate(gemm):
        rows.append((p, CFG.format(t="64x64x32", a="8x8x8"), 10.0 + i))
        rows.append((p, CFG.format(t="128x128x32", a="8x8x8"), 30.0))
    write_records(tmp_path / "gemm_train.csv.gz", rows)
    assert prune.main([str(tmp_path / "gemm_train.csv.gz"), "--out", str(tmp_path / "models"), "--no-cv",
                       "--redundancy", "1"]) == 0
    lines = (tmp_path / "models" / "gemm_half_h200" / "candidates.txt").read_text().splitlines()
    assert lines[0].startswith("# tilepick pool pruning for gemm_half_h200")
    assert [x for x in lines if not x.startswith("#")] == [CFG.format(t="64x64x32", a="auto")]
    write_records(tmp_path / "gemm_val.csv.gz", rows)
    with pytest.raises(SystemExit):
        prune.main([str(tmp_path / "gemm_val.csv.gz"), "--out", str(tmp_path / "models")])
