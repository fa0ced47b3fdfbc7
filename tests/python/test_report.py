"""The sweep report (python -m tilepick.report and `tilepick report`) on a hand-checked example."""
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from test_records import BWD_W, DW7, GEMM_BIG, GEMM_TINY, GROUPED, HEADER, ROWS_A1, ROWS_A2, ROWS_B, SIZES, \
    write_records
from tilepick.report import device_roofs, main, shape_family

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
H200_BF16, H200_BW = 989.4, 4800.0  # data/arch/h200.json


@pytest.fixture
def records(tmp_path):
    return [write_records(tmp_path / "a.csv.gz", [ROWS_A1, ROWS_A2]), write_records(tmp_path / "b.csv.gz", [ROWS_B])]


@pytest.fixture
def problems_file(tmp_path):
    p = tmp_path / "problems.txt"
    p.write_text("big: gemm rcr m4096 n4096 k4096 bf16\ndw7: fwd bf16 g96 mb32 ic96 ih56 iw56 oc96 kh7 kw7 ph3 pw3\n")
    return str(p)


def test_shape_families():
    assert shape_family(GEMM_BIG) == ("gemm", "large", "")
    assert shape_family(GEMM_TINY) == ("gemm", "tiny", "")
    assert shape_family("gemm rcr m16 n8 k8 f16")[1] == "tiny"
    assert shape_family("gemm rcr m17 n8 k8 f16")[1] == "small"
    assert shape_family("gemm rcr m256 n8 k8 f16")[1] == "small"
    assert shape_family("gemm rcr m2048 n8 k8 f16")[1] == "medium"
    assert shape_family("gemm rcr m2049 n8 k8 f16")[1] == "large"
    assert shape_family(DW7) == ("conv_fwd", "depthwise", "7x7")
    assert shape_family(GROUPED) == ("conv_fwd", "grouped", "3x3")
    assert shape_family(BWD_W) == ("conv_bwd_weight", "dense", "1x1")
    assert shape_family("fwd g1 mb1 ic8 ih8 iw8 oc8 kh5 kw5 bf16")[2] == "other"
    assert shape_family("fwd g1 mb1 ic8 ih8 iw8 oc8 kh1 kw3 bf16")[2] == "other"
    assert shape_family("bwd_data g1 mb8 ic64 id8 ih8 iw8 oc64 kd3 kh3 kw3 f16") == ("conv_bwd_data", "dense", "3x3x3")


def test_roofs_from_matched_arch_spec_and_arch_option():
    roofs = device_roofs(HEADER)
    assert roofs["peak_bf16"] == H200_BF16 and roofs["mem_bw_gbps"] == H200_BW and "h200.json" in roofs["source"]
    cut = device_roofs(dict(HEADER, device=dict(HEADER["device"], sm_count=66)))  # half the SMs: half the peak
    assert math.isclose(cut["peak_bf16"], H200_BF16 / 2)
    own = device_roofs(dict(HEADER, device=dict(HEADER["device"], peak_bf16=900.0, mem_bw_gbps=4000)))
    assert (own["peak_bf16"], own["mem_bw_gbps"], own["source"]) == (900.0, 4000, "sweep header")
    assert device_roofs(HEADER, "h100_pcie")["device_name"].startswith("NVIDIA H100")
    assert device_roofs({"device": {"name": "Unknown GPU"}}) is None


def test_report_numbers(tmp_path, records, problems_file, capsys):
    out = tmp_path / "out"
    assert main(records + ["--out", str(out), "--problems-file", problems_file]) == 0
    for name in ("report.csv", "summary.csv", "speedup_vs_vendor.png", "roofline.png"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "roofline.png").read_bytes()[:4] == b"\x89PNG"
    text = capsys.readouterr().out
    assert "22 records from 2 file(s), device NVIDIA H200; 5 problems, 4 with an ok config" in text

    rep = pd.read_csv(out / "report.csv", keep_default_na=False, na_values=[""]).set_index("problem")
    assert list(rep["op"]) == ["gemm", "gemm", "conv_fwd", "conv_fwd", "conv_bwd_weight"]
    big = rep.loc[GEMM_BIG]
    assert (big["tag"], big["family"], big["dtype"]) == ("big", "gemm large", "bf16")
    assert big["oracle_us"] == 200 and big["vendor_best_us"] == 210 and big["vendor_heur_us"] == 220
    assert math.isclose(big["speedup_vs_best"], 1.05, rel_tol=1e-5)
    assert math.isclose(big["speedup_vs_heur"], 1.1, rel_tol=1e-5)
    flops, nbytes = SIZES[GEMM_BIG]
    assert math.isclose(big["oracle_tflops"], flops / 200e-6 / 1e12, rel_tol=1e-5)  # 687.2
    assert math.isclose(big["intensity"], 4096 / 3, rel_tol=1e-5)  # 2 n^3 / (3 n^2 * 2 bytes)
    assert big["bound"] == "compute" and math.isclose(big["roof_tflops"], H200_BF16, rel_tol=1e-5)
    assert math.isclose(big["roofline_frac"], 687.19476736 / 989.4, rel_tol=1e-5)
    assert (big["n_configs"], big["n_ok"], big["n_failed"]) == (4, 2, 2)

    tiny = rep.loc[GEMM_TINY]  # memory bound: intensity 7.97 flop/B x 4.8 TB/s = 38.3 TFLOPS roof
    flops, nbytes = SIZES[GEMM_TINY]
    assert tiny["bound"] == "memory" and math.isclose(tiny["roof_tflops"], flops / nbytes * 4.8, rel_tol=1e-5)
    assert math.isclose(tiny["roofline_frac"], (flops / 16e-6 / 1e12) / (flops / nbytes * 4.8), rel_tol=1e-5)
    assert tiny["vendor_best"] == "cublaslt:heur" and math.isclose(tiny["speedup_vs_best"], 1.25, rel_tol=1e-5)

    dw = rep.loc[DW7]
    assert dw["tag"] == "dw7" and dw["family"] == "conv_fwd depthwise 7x7" and dw["vendor_best_algo"] == "FFT"
    assert math.isclose(dw["speedup_vs_best"], 1.6, rel_tol=1e-5) and math.isclose(dw["speedup_vs_heur"], 2.0)
    grouped = rep.loc[GROUPED]
    assert pd.isna(grouped["oracle_config"]) and pd.isna(grouped["speedup_vs_best"]) and grouped["n_error"] == 2
    bw = rep.loc[BWD_W]
    assert math.isclose(bw["speedup_vs_best"], 0.7, rel_tol=1e-5) and math.isclose(bw["speedup_vs_heur"], 0.75)

    summ = pd.read_csv(out / "summary.csv").set_index("family")
    assert math.isclose(summ.loc["gemm large", "geomean_vs_best"], 1.05, rel_tol=1e-5)
    assert math.isclose(summ.loc["gemm all", "geomean_vs_best"], math.sqrt(1.05 * 1.25), rel_tol=1e-5)
    assert math.isclose(summ.loc["gemm all", "geomean_vs_heur"], math.sqrt(1.1 * 1.25), rel_tol=1e-5)
    assert summ.loc["conv_fwd grouped 3x3", "n_vs_best"] == 0
    assert pd.isna(summ.loc["conv_fwd grouped 3x3", "geomean_vs_best"])
    assert math.isclose(summ.loc["conv_fwd all", "geomean_vs_best"], 1.6, rel_tol=1e-5)  # grouped has none
    assert (summ.loc["conv_fwd all", "n_problems"], summ.loc["conv_fwd all", "n_oracle"]) == (2, 1)
    assert math.isclose(summ.loc["all", "geomean_vs_best"], (1.05 * 1.25 * 1.6 * 0.7) ** 0.25, rel_tol=1e-5)
    assert (summ.loc["all", "wins_vs_best"], summ.loc["all", "n_vs_best"]) == (3, 4)
    assert (summ.loc["all", "n_ok"], summ.loc["all", "n_failed"]) == (6, 5)


def test_arch_option_changes_the_roofs(tmp_path, records):
    out = tmp_path / "out"
    assert main(records + ["--out", str(out), "--arch", "a100_sxm"]) == 0
    big = pd.read_csv(out / "report.csv").set_index("problem").loc[GEMM_BIG]
    assert big["roof_tflops"] < 400  # A100 bf16 peak 312
    assert main(records + ["--out", str(out), "--arch", "b9000"]) == 1


def test_module_entry_point_and_bad_input(tmp_path, records):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    r = subprocess.run([sys.executable, "-m", "tilepick.report", *records, "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and (tmp_path / "o" / "summary.csv").exists()
    other = write_records(tmp_path / "h100.csv.gz", [ROWS_B], header=dict(HEADER, device={"name": "NVIDIA H100"}))
    r = subprocess.run([sys.executable, "-m", "tilepick.report", records[0], other, "--out", str(tmp_path / "x")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "differs" in r.stderr


# ----------------------------------------------------------------------------- the C++ CLI

@pytest.fixture
def cli():
    path = os.environ.get("TILEPICK_CLI")
    if not path:
        pytest.skip("TILEPICK_CLI is not set (ctest sets it to the built tilepick)")
    return path


def test_cli_report(tmp_path, cli, records, problems_file):
    out = tmp_path / "cli"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the CLI points python at the source tree
    r = subprocess.run([cli, "report", *records, "--out", str(out), "--problems-file", problems_file],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "5 problems" in r.stdout
    rep = pd.read_csv(out / "report.csv").set_index("problem")
    assert rep.loc[GEMM_BIG, "tag"] == "big" and (out / "speedup_vs_vendor.png").exists()
    r = subprocess.run([cli, "report", "--help"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "--problems-file" in r.stdout
    r = subprocess.run([cli, "report", records[0]], capture_output=True, text=True, env=env)  # no --out
    assert r.returncode != 0 and "--out" in r.stderr


def test_cli_report_without_python(tmp_path, cli, records):
    env = dict(os.environ, PATH=str(tmp_path / "empty"))
    r = subprocess.run([cli, "report", *records, "--out", str(tmp_path / "o")], capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "python3 is not on PATH" in r.stderr


def test_cli_report_without_packages(tmp_path, cli, records):
    probe = subprocess.run([sys.executable, "-S", "-c", "import pandas"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("pandas is importable without site-packages here")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python3"  # a python3 that sees no site-packages
    fake.write_text(f"#!/bin/sh\nexec '{sys.executable}' -S \"$@\"\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin")
    r = subprocess.run([cli, "report", *records, "--out", str(tmp_path / "o")], capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "lacks the package(s)" in r.stderr and "pandas" in r.stderr


def test_report_without_any_ok_config_and_empty_files(tmp_path, capsys):
    failed = write_records(tmp_path / "f.csv.gz", [ROWS_B[:2]])  # two compile errors, no vendor rows
    assert main([failed, "--out", str(tmp_path / "f")]) == 0
    rep = pd.read_csv(tmp_path / "f" / "report.csv")
    assert len(rep) == 1 and rep["n_error"].iloc[0] == 2
    assert rep[["oracle_us", "speedup_vs_best", "roof_tflops", "roofline_frac"]].isna().all(axis=None)
    assert (tmp_path / "f" / "roofline.png").exists()
    empty = write_records(tmp_path / "e.csv.gz", [[]])
    assert main([empty, "--out", str(tmp_path / "e")]) == 1
    assert "no rows" in capsys.readouterr().err


def test_device_block_of_the_sweeps_devices_list():
    """The sweep writes "devices" (one per GPU); the report reads its first, as it read "device"."""
    from tilepick.records import device_of

    listed = {k: v for k, v in HEADER.items() if k != "device"}
    listed["devices"] = [HEADER["device"], {"name": "NVIDIA H200"}]
    assert device_of(listed) == HEADER["device"]
    assert device_roofs(listed) == device_roofs(HEADER)
    assert device_of({}) == {} and device_of({"devices": []}) == {} and device_of({"devices": ["x"]}) == {}
