"""Reading sweep record files (docs/sweep.md) and the per-problem oracle / vendor picks."""
import gzip
import json
import math

import pytest

from tilepick.records import oracle, problem_fields, problem_key, problem_op, read_problem_tags, read_records

COLUMNS = ("problem,config,status,median_us,iqr_us,reps,tflops,gbps,max_err,rel_err,tol,compile_s,registers,"
           "spills,cached,gpu,time_unix,detail")
HEADER = {"format": "tilepick-sweep/1", "device": {"name": "NVIDIA H200", "sm_count": 132, "cc_major": 9,
                                                   "cc_minor": 0},
          "versions": {"cuda": "12.8"}, "commit": "abc", "date": "2026-11-20"}

# Problem -> (flops, minimum bytes), worked out by hand (bf16: 2 bytes per element).
GEMM_BIG = "gemm rcr m4096 n4096 k4096 bf16"
GEMM_TINY = "gemm rcr m8 n4096 k4096 bf16"
DW7 = "fwd g96 mb32 ic96 ih56 iw56 oc96 kh7 kw7 sh1 sw1 ph3 pw3 bf16"
GROUPED = "fwd g32 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16"
BWD_W = "bwd_weight g1 mb32 ic256 ih14 iw14 oc1024 kh1 kw1 sh1 sw1 ph0 pw0 bf16"
SIZES = {
    GEMM_BIG: (2 * 4096**3, 3 * 4096 * 4096 * 2),
    GEMM_TINY: (2 * 8 * 4096 * 4096, (8 * 4096 + 4096 * 4096 + 8 * 4096) * 2),
    DW7: (2 * 32 * 56 * 56 * 96 * 49, (2 * 32 * 56 * 56 * 96 + 96 * 49) * 2),
    GROUPED: (2 * 32 * 56 * 56 * 256 * 8 * 9, (2 * 32 * 56 * 56 * 256 + 256 * 8 * 9) * 2),
    BWD_W: (2 * 32 * 14 * 14 * 1024 * 256, (32 * 14 * 14 * 256 + 1024 * 256 + 32 * 14 * 14 * 1024) * 2),
}


def row(problem, config, status, us=None, detail=""):
    """One CSV row as the sweep writes it; TFLOPS and GB/s follow from the problem and the time."""
    if status == "ok":
        flops, nbytes = SIZES[problem]
        t = us * 1e-6
        timing = f"{us},{us * 0.01},50,{flops / t / 1e12!r},{nbytes / t / 1e9!r}"
    else:
        timing = ",,,,"
    return f"{problem},{config},{status},{timing},1e-3,1e-4,2e-2,0.5,128,0,0,0,1763600000,{detail}"


CFG = ["fam=sm80 tile=128x128x32 warps=2x2 stages=4 splitk=1", "fam=sm80 tile=64x64x32 warps=2x2 stages=3 splitk=1",
       "fam=sm80 tile=128x256x32 warps=2x4 stages=3 splitk=1", "fam=dw tile=64x8 warps=4 stages=2"]

# Two groups of rows: file A (two members), file B (one member).
ROWS_A1 = [
    row(GEMM_BIG, CFG[0], "ok", 200), row(GEMM_BIG, CFG[1], "ok", 250), row(GEMM_BIG, CFG[2], "wrong"),
    row(GEMM_BIG, CFG[3], "crash", detail="illegal address"),
    row(GEMM_BIG, "vendor=cublaslt:heur", "ok", 220, "algo=1 tile=256x128"),
    row(GEMM_BIG, "vendor=cublaslt:best", "ok", 210, "algo=7 tile=128x256"),
]
ROWS_A2 = [
    row(GEMM_TINY, CFG[0], "ok", 20), row(GEMM_TINY, CFG[1], "ok", 16),
    row(GEMM_TINY, "vendor=cublaslt:heur", "ok", 20, "algo=3"),
    row(GEMM_TINY, "vendor=cublaslt:best", "ok", 24, "algo=5"),
    row(DW7, CFG[3], "ok", 50), row(DW7, CFG[0], "timeout"), row(DW7, CFG[1], "unsupported"),
    row(DW7, "vendor=cudnn:heur", "ok", 100, "IMPLICIT_GEMM"), row(DW7, "vendor=cudnn:exhaustive", "ok", 80, "FFT"),
]
ROWS_B = [
    row(GROUPED, CFG[0], "error", detail="compile error"), row(GROUPED, CFG[1], "error"),
    row(GROUPED, "vendor=cudnn:heur", "ok", 90, "IMPLICIT_PRECOMP_GEMM"),
    row(GROUPED, "vendor=cudnn:exhaustive", "unsupported"),
    row(BWD_W, CFG[0], "ok", 40), row(BWD_W, "vendor=cudnn:heur", "ok", 30, "ALGO_1"),
    row(BWD_W, "vendor=cudnn:exhaustive", "ok", 28, "ALGO_0"),
]


def write_records(path, members, header=HEADER, truncate_last=False):
    """A record file: member 1 holds the header line, the column row and members[0]'s rows."""
    blobs = []
    for i, rows in enumerate(members):
        text = (f"# {json.dumps(header)}\n{COLUMNS}\n" if i == 0 else "") + "".join(r + "\n" for r in rows)
        blobs.append(gzip.compress(text.encode()))
    if truncate_last:
        blobs[-1] = blobs[-1][: len(blobs[-1]) // 2]
    path.write_bytes(b"".join(blobs))
    return str(path)


@pytest.fixture
def two_files(tmp_path):
    a = write_records(tmp_path / "a.csv.gz", [ROWS_A1, ROWS_A2])
    b = write_records(tmp_path / "b.csv.gz", [ROWS_B])
    return a, b


def test_multi_member_file_reads_every_row_with_header(two_files):
    header, df = read_records(two_files[0])
    assert header["format"] == "tilepick-sweep/1" and header["device"]["name"] == "NVIDIA H200"
    assert len(df) == len(ROWS_A1) + len(ROWS_A2)
    assert list(df["problem"].iloc[[0, 6]]) == [GEMM_BIG, GEMM_TINY]
    assert df["median_us"].dtype.kind == "f" and df["reps"].dtype.kind in "if"
    assert df.loc[3, "detail"] == "illegal address"
    assert set(df["source"]) == {two_files[0]}


def test_helper_columns(two_files):
    _, df = read_records(list(two_files))
    by_problem = df.groupby("problem")["op"].first()
    assert by_problem[GEMM_BIG] == "gemm" and by_problem[DW7] == "conv_fwd" and by_problem[BWD_W] == "conv_bwd_weight"
    v = df[df["is_vendor"]]
    assert len(v) == 10 and set(v["vendor_lib"]) == {"cublaslt", "cudnn"}
    assert set(df.loc[df["config"] == "vendor=cudnn:exhaustive", "vendor_kind"]) == {"best"}
    first = df.iloc[0]  # GEMM_BIG at 200 us
    assert math.isclose(first["flops"], SIZES[GEMM_BIG][0], rel_tol=1e-9)
    assert math.isclose(first["bytes"], SIZES[GEMM_BIG][1], rel_tol=1e-9)
    assert math.isnan(df.iloc[2]["flops"])  # wrong: not timed


def test_several_files_concat_with_source(two_files):
    header, df = read_records(list(two_files))
    assert len(df) == len(ROWS_A1) + len(ROWS_A2) + len(ROWS_B)
    assert [f["rows"] for f in header["record_files"]] == [15, 7]
    assert set(df.loc[df["problem"] == BWD_W, "source"]) == {two_files[1]}


def test_device_mismatch_is_refused(tmp_path, two_files):
    other = dict(HEADER, device={"name": "NVIDIA H100 80GB HBM3"})
    c = write_records(tmp_path / "c.csv.gz", [ROWS_B], header=other)
    with pytest.raises(ValueError, match="H100 80GB HBM3.*differs"):
        read_records([two_files[0], c])


def test_truncated_last_member_keeps_complete_members(tmp_path):
    p = write_records(tmp_path / "t.csv.gz", [ROWS_A1, ROWS_A2, ROWS_B], truncate_last=True)
    with pytest.warns(UserWarning, match="truncated"):
        _, df = read_records(p)
    assert len(df) == len(ROWS_A1) + len(ROWS_A2)
    assert BWD_W not in set(df["problem"])


def test_row_cut_mid_line_is_dropped(tmp_path):
    text = f"# {json.dumps(HEADER)}\n{COLUMNS}\n" + "".join(r + "\n" for r in ROWS_B)
    (tmp_path / "cut.csv.gz").write_bytes(gzip.compress(text[:-20].encode()))
    with pytest.warns(UserWarning, match="incomplete"):
        _, df = read_records(str(tmp_path / "cut.csv.gz"))
    assert len(df) == len(ROWS_B) - 1


def test_resumed_sweep_repeats_header_and_column_row(tmp_path):
    p = tmp_path / "r.csv.gz"
    write_records(p, [ROWS_A1])
    with open(p, "ab") as f:  # a second run appends its own header and column row
        f.write(gzip.compress(f"# {json.dumps(HEADER)}\n{COLUMNS}\n{ROWS_B[0]}\n".encode()))
    header, df = read_records(str(p))
    assert len(df) == len(ROWS_A1) + 1 and header["commit"] == "abc"


def test_plain_text_file_and_pandas_comment_reading(tmp_path):
    text = f"# {json.dumps(HEADER)}\n{COLUMNS}\n" + "".join(r + "\n" for r in ROWS_B)
    (tmp_path / "p.csv").write_text(text)
    _, df = read_records(str(tmp_path / "p.csv"))
    assert len(df) == len(ROWS_B)
    import pandas as pd  # the format promise: plain pandas reads it too
    (tmp_path / "p.csv.gz").write_bytes(gzip.compress(text.encode()))
    assert len(pd.read_csv(tmp_path / "p.csv.gz", comment="#")) == len(ROWS_B)


def test_oracle_and_vendor_picks(two_files):
    _, df = read_records(list(two_files))
    o = oracle(df)
    assert list(o.index) == [GEMM_BIG, GEMM_TINY, DW7, GROUPED, BWD_W]
    big = o.loc[GEMM_BIG]
    assert big["oracle_config"] == CFG[0] and big["oracle_us"] == 200
    assert (big["n_configs"], big["n_ok"], big["n_failed"], big["n_wrong"], big["n_crash"]) == (4, 2, 2, 1, 1)
    assert (big["vendor_heur"], big["vendor_heur_us"], big["vendor_heur_algo"]) == ("cublaslt:heur", 220,
                                                                                    "algo=1 tile=256x128")
    assert (big["vendor_best"], big["vendor_best_us"], big["vendor_best_algo"]) == ("cublaslt:best", 210,
                                                                                    "algo=7 tile=128x256")
    assert math.isclose(big["oracle_tflops"], SIZES[GEMM_BIG][0] / 200e-6 / 1e12)
    tiny = o.loc[GEMM_TINY]  # the heuristic pick (20 us) beat the timed "best" (24 us)
    assert tiny["oracle_config"] == CFG[1] and tiny["oracle_us"] == 16
    assert (tiny["vendor_best"], tiny["vendor_best_us"]) == ("cublaslt:heur", 20)
    dw = o.loc[DW7]
    assert (dw["n_ok"], dw["n_timeout"], dw["n_unsupported"], dw["n_failed"]) == (1, 1, 1, 1)
    assert (dw["vendor_best"], dw["vendor_best_us"], dw["vendor_heur_us"]) == ("cudnn:exhaustive", 80, 100)
    grouped = o.loc[GROUPED]  # no ok config: no oracle; vendor best falls back to the heuristic pick
    assert grouped["oracle_config"] == "" and math.isnan(grouped["oracle_us"]) and grouped["n_error"] == 2
    assert (grouped["vendor_best"], grouped["vendor_best_us"]) == ("cudnn:heur", 90)
    assert math.isclose(grouped["flops"], SIZES[GROUPED][0], rel_tol=1e-9)  # from the vendor row


def test_problem_strings():
    assert problem_op("bwd_data g1 mb8 ic128 id8 ih28 iw28 oc128 kd3 kh3 kw3 f16") == "conv_bwd_data"
    assert problem_op("bwd_w g1 mb8 ic8 ih8 iw8 oc8 kh1 kw1 f16") == "conv_bwd_weight"
    assert problem_op("matmul m1") == "unknown"
    f = problem_fields("bwd_data g1 mb8 ic128 id8 ih28 iw28 oc128 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 f16")
    assert f["ndim"] == 3 and (f["kd"], f["ic"], f["pd"]) == (3, 128, 1) and f["dtypes"] == ("f16",) * 3
    g = problem_fields("gemm rcr batch4 m16 n32 k64 e4m3:e4m3:bf16 ep=bias+relu")
    assert (g["layout"], g["batch"], g["m"], g["n"], g["k"]) == ("rcr", 4, 16, 32, 64)
    assert g["dtypes"] == ("e4m3", "e4m3", "bf16") and g["options"] == {"ep": "bias+relu"}
    assert problem_key(DW7) == problem_key("fwd bf16 g96 mb32 ic96 ih56 iw56 oc96 kh7 kw7 ph3 pw3")
    assert problem_key(GEMM_BIG) == problem_key("gemm rcr m4096 n4096 k4096 bf16 acc=fp32 alpha=1.0 beta=0")
    assert problem_key(GEMM_BIG) != problem_key("gemm rcr m4096 n4096 k4096 f16")
    assert problem_key(GEMM_BIG) != problem_key(GEMM_BIG + " ep=relu")


def test_problem_tags(tmp_path):
    p = tmp_path / "problems.txt"
    p.write_text("# a comment\nbig: gemm rcr m4096 n4096 k4096 bf16  # trailing comment\n\n"
                 "dw7: fwd bf16 g96 mb32 ic96 ih56 iw56 oc96 kh7 kw7 ph3 pw3\n" + BWD_W + "\n")
    tags = read_problem_tags(str(p))
    assert tags == {problem_key(GEMM_BIG): "big", problem_key(DW7): "dw7"}
