"""Rewrites the LightGBM files of a models directory as their prediction text (train.prediction_text: the
same trees without per-node training statistics, the same predictions) and restamps each fast/ student
whose teacher_version names the teacher as it was: its text hash, or the hash of its file's bytes (how
versions were computed before 2026-11-23). Students of another teacher are left as they are.

usage: python -m tilepick.slim [--models models] [--check-only]"""
from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from tilepick import _core
from tilepick.train import fnv_hex16, model_file, prediction_text, read_model_text, text_fnv, write_text_gz

ROOT = Path(__file__).resolve().parents[2]


def slim_file(path: Path, text: str) -> bool:
    """Rewrites path as text's prediction text when that differs; True when it did."""
    slim = prediction_text(text)
    if slim == text:
        return False
    write_text_gz(path, slim) if path.suffix == ".gz" else path.write_text(slim)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tilepick.slim", description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=str(ROOT / "models"))
    ap.add_argument("--check-only", action="store_true", help="report what would change, write nothing")
    a = ap.parse_args(argv)
    folders = sorted(p.parent for p in Path(a.models).glob("*/feature_spec.json"))
    # the teachers' versions before any rewrite (several folders may share one file)
    before = {}
    for f in folders:
        before[f] = {_core.model_version(str(f)), f"{f.name}@{fnv_hex16(model_file(f).read_bytes())}"}
    done: set[Path] = set()
    for f in folders:
        path = model_file(f).resolve()
        if path not in done:
            done.add(path)
            changed = False if a.check_only else slim_file(path, read_model_text(f))
            print(f"{path.relative_to(Path(a.models).resolve().parent)}: {'rewritten' if changed else 'unchanged'}")
        if not a.check_only:  # the text hash the loader checks, for every folder naming the file
            spec_path = f / "feature_spec.json"
            spec = json.loads(spec_path.read_text())
            spec["model_text_fnv"] = text_fnv(read_model_text(f))
            spec_path.write_text(json.dumps(spec, indent=1) + "\n")
    for f in folders:
        spec_path, student = f / "fast" / "feature_spec.json", f / "fast" / "model.txt.gz"
        if not spec_path.exists():
            continue
        spec = json.loads(spec_path.read_text())
        if spec.get("teacher_version") not in before[f]:
            print(f"{f.name}/fast: teacher_version {spec.get('teacher_version')} names another teacher; left alone")
            continue
        if a.check_only:
            continue
        if student.exists():
            slim_file(student, gzip.open(student, "rt").read())
            spec["model_text_fnv"] = text_fnv(gzip.open(student, "rt").read())
        spec["teacher_version"] = _core.model_version(str(f))
        spec_path.write_text(json.dumps(spec, indent=1) + "\n")
        manifest_path = f / "fast" / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        manifest.pop("teacher_file_fnv", None)
        manifest["teacher_version"] = spec["teacher_version"]
        manifest["teacher_text_fnv"] = spec["teacher_version"].rsplit("@", 1)[1]
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"{f.name}/fast: restamped for {spec['teacher_version']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
