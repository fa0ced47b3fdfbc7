"""Distillation (python -m tilepick.distill) on the shipped GEMM teacher and three problems: the files it
writes, determinism, the selector using the student (and refusing it for a changed teacher), and the
held-out problem files it refuses."""
import gzip
import json
import shutil
from pathlib import Path

import pytest

from tilepick import _core, distill

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ["gemm rcr m1 n4096 k4096 bf16", "gemm rcr m512 n4096 k4096 bf16", "gemm rcr m4096 n1024 k4096 bf16"]


def teacher(tmp_path: Path, name: str) -> Path:
    models = tmp_path / name
    dst = models / "gemm_half_h200"
    dst.mkdir(parents=True)
    for f in ("model.txt.gz", "feature_spec.json", "manifest.json", "candidates.txt"):
        shutil.copy(ROOT / "models" / "gemm_half_h200" / f, dst / f)
    return models


def problems_file(tmp_path: Path, name="p_train.txt") -> Path:
    f = tmp_path / name
    f.write_text("".join(f"net{i}.x: {p}\n" for i, p in enumerate(PROBLEMS)))
    return f


def run(models: Path, pfile: Path) -> None:
    assert distill.main(["--models", str(models), "--problems-file", str(pfile), "--synthetic", "1",
                         "--threads", "1"]) == 0


def test_writes_a_student_the_selector_uses_deterministically(tmp_path):
    pfile = problems_file(tmp_path)
    a, b = teacher(tmp_path, "a"), teacher(tmp_path, "b")
    run(a, pfile)
    run(b, pfile)
    fast = a / "gemm_half_h200" / "fast"
    assert (fast / "model.txt.gz").read_bytes() == (b / "gemm_half_h200" / "fast" / "model.txt.gz").read_bytes()
    assert not (fast / "candidates.txt").exists()
    spec = json.loads((fast / "feature_spec.json").read_text())
    assert spec["teacher_version"] == _core.model_version(str(a / "gemm_half_h200"))
    assert spec["schema_hash"] == _core.feature_schema_hash()
    assert spec["rescore_top"] == distill.RESCORE_TOP
    manifest = json.loads((fast / "manifest.json").read_text())
    assert manifest["problems"]["training"] == 3 and manifest["command"].startswith("python -m tilepick.distill")
    objective = json.loads((a / "gemm_half_h200" / "feature_spec.json").read_text())["objective"]
    assert manifest["clip"] == distill.CLIP_BY_OBJECTIVE.get(objective, distill.CLIP)
    assert spec["teacher_version"].endswith(manifest["teacher_text_fnv"])
    for p in PROBLEMS:  # fitted problems: the fast pick is the teacher's
        configs, used = _core.selector_pool(p, "h200", str(a), "fast")
        assert used and len(configs) > 16
        fast_top = _core.selector_rank(p, "h200", str(a), "fast", 1)[0]
        full_top = _core.selector_rank(p, "h200", str(a), "full", 1)[0]
        assert fast_top == full_top, p


def test_a_lambdarank_teacher_gets_its_own_clip_unless_one_is_given(tmp_path):
    pfile = problems_file(tmp_path)
    models = teacher(tmp_path, "rank")
    spec_file = models / "gemm_half_h200" / "feature_spec.json"
    clip = lambda: json.loads((models / "gemm_half_h200" / "fast" / "manifest.json").read_text())["clip"]
    spec_file.write_text(json.dumps(dict(json.loads(spec_file.read_text()), objective="reg_rel")))
    run(models, pfile)
    assert clip() == distill.CLIP == 1  # a regression teacher: targets clipped at 1 (log time ratio)
    spec_file.write_text(json.dumps(dict(json.loads(spec_file.read_text()), objective="lambdarank")))
    run(models, pfile)
    assert clip() == distill.CLIP_BY_OBJECTIVE["lambdarank"] == 16
    assert distill.main(["--models", str(models), "--problems-file", str(pfile), "--synthetic", "1", "--threads", "1",
                         "--clip", "4"]) == 0
    assert clip() == 4


def test_a_changed_teacher_refuses_the_student(tmp_path):
    models = teacher(tmp_path, "stale")
    run(models, problems_file(tmp_path))
    gz = models / "gemm_half_h200" / "model.txt.gz"
    text = gzip.decompress(gz.read_bytes())
    gz.write_bytes(gzip.compress(text, compresslevel=1, mtime=0))  # same text, other bytes: the same teacher
    assert _core.selector_pool(PROBLEMS[0], "h200", str(models), "fast")[1]
    at = text.index(b"leaf_value=") + len(b"leaf_value=")
    changed = text[:at] + b"1" + text[at:]  # one leaf value changed: another teacher
    other = tmp_path / "changed"  # a new folder: selectors are cached per models folder
    shutil.copytree(models, other)
    (other / "gemm_half_h200" / "model.txt.gz").write_bytes(gzip.compress(changed, compresslevel=1, mtime=0))
    _, used = _core.selector_pool(PROBLEMS[0], "h200", str(other), "fast")
    assert not used


def test_refuses_held_out_problem_files(tmp_path):
    with pytest.raises(ValueError, match="held-out"):
        run(teacher(tmp_path, "v"), problems_file(tmp_path, "p_val.txt"))


def test_slim_rewrites_an_old_teacher_and_restamps_its_student(tmp_path):
    from tilepick import slim
    models = teacher(tmp_path, "old")
    run(models, problems_file(tmp_path))
    folder = models / "gemm_half_h200"
    text = gzip.open(folder / "model.txt.gz", "rt").read()
    at = text.index("\nleaf_value=")
    old = text[:at] + "\ninternal_count=7 3" + text[at:]  # a training statistic, as LightGBM writes them
    (folder / "model.txt.gz").write_bytes(gzip.compress(old.encode(), mtime=0))
    spec_path = folder / "fast" / "feature_spec.json"
    spec = json.loads(spec_path.read_text())
    spec["teacher_version"] = "gemm_half_h200@" + distill.fnv_hex16((folder / "model.txt.gz").read_bytes())  # bytes hash
    spec_path.write_text(json.dumps(spec))
    assert not _core.selector_pool(PROBLEMS[0], "h200", str(models), "fast")[1]
    assert slim.main(["--models", str(models)]) == 0
    assert gzip.open(folder / "model.txt.gz", "rt").read() == text
    assert json.loads(spec_path.read_text())["teacher_version"] == _core.model_version(str(folder))
    fresh = tmp_path / "fresh"  # selectors are cached per models folder
    shutil.copytree(models, fresh)
    assert _core.selector_pool(PROBLEMS[0], "h200", str(fresh), "fast")[1]
