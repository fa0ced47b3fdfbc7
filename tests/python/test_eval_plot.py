"""The efficiency CDF of `tilepick eval` (python -m tilepick.eval_plot) on a small eval.csv."""
import pytest

from tilepick.eval_plot import main, read_rows, values

CSV = """op,problem,tag,source,candidates,chosen_config,chosen_status,chosen_us,oracle_config,oracle_us,efficiency,oracle_rank,top1,top5,fallback_config,fallback_us,fallback_efficiency,vendor,vendor_heur_us,vendor_best_us,vendor_efficiency_own,vendor_efficiency_vs_oracle
gemm,"gemm rcr m64 n256 k512 bf16",llm,model:g,3,"a",ok,12,"b",10,0.833333,2,0,1,"c",20,0.5,cublaslt,11,10.5,0.954545,0.909091
gemm,"gemm rcr m8 n256 k512 bf16",,model:g,3,"a",wrong,,"c",9,0,3,0,1,"b",10,0.9,,,,,
conv_fwd,"fwd g1 mb1 ic8 ih4 iw4 oc8 kh1 kw1 sh1 sw1 ph0 pw0 bf16",,fallback,2,"a",ok,5,"a",5,1,1,1,1,"a",5,1,cudnn,6,5.5,0.916667,0.833333
"""


def test_reads_columns_and_skips_blanks(tmp_path):
    path = tmp_path / "eval.csv"
    path.write_text(CSV)
    rows = read_rows(str(path))
    assert len(rows) == 3
    assert values(rows, "efficiency") == [0.0, 0.833333, 1.0]
    assert values(rows, "vendor_efficiency_own") == [0.916667, 0.954545]


def test_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "eval.csv"
    path.write_text(CSV)
    out = tmp_path / "cdf.png"
    assert main([str(path), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_empty_csv_is_an_error(tmp_path):
    path = tmp_path / "eval.csv"
    path.write_text(CSV.splitlines()[0] + "\n")
    assert main([str(path), "-o", str(tmp_path / "x.png")]) == 1
