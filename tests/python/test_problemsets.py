"""Problem sets in data/problems: reproducible from their generators, split by whole network, parseable."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "data", "problems")
sys.path.insert(0, os.path.join(ROOT, "scripts", "problemsets"))

import build_all  # noqa: E402
from common import (CONV_TRAIN, CONV_TRAIN2, CONV_TRAIN3, CONV_VAL, CONV_VAL2, GEMM_TRAIN, GEMM_VAL, GEMM_VAL2,  # noqa: E402
                    SYNTH_PREFIXES, network_of)
from shapes import read_problems  # noqa: E402
from sweep_subsets import conv_info, gemm_flops  # noqa: E402

GENERATED = [name for name, _, _ in build_all.manifest()] + list(build_all.LEGACY) + list(build_all.SWEEP_FILES)
VAL_FILES = [n for n in GENERATED if "_val" in n]
TRAIN_FILES = [n for n in GENERATED if n not in VAL_FILES]
VAL_NETS = set(CONV_VAL) | set(CONV_VAL2) | set(GEMM_VAL) | set(GEMM_VAL2)
LEGACY_NETS = {"mbv2"}  # mobilenet_v2's tag prefix in the legacy files


def problems(name):
    return read_problems(os.path.join(DATA, name))


def keys(names):
    return {prob for n in names for _, prob in problems(n)}


def test_generators_reproduce_committed_files(tmp_path):
    written = build_all.build(str(tmp_path))
    assert sorted(written) == sorted(GENERATED)
    for name in written:
        with open(tmp_path / name) as new, open(os.path.join(DATA, name)) as old:
            assert new.read() == old.read(), f"{name} differs from its generator's output"


def test_no_validation_network_in_training_files():
    known = set(CONV_TRAIN) | set(CONV_TRAIN2) | set(CONV_TRAIN3) | set(GEMM_TRAIN) | set(SYNTH_PREFIXES) | LEGACY_NETS
    for name in TRAIN_FILES:
        nets = {network_of(tag) for tag, _ in problems(name)}
        assert not nets & VAL_NETS, f"{name} holds validation networks {nets & VAL_NETS}"
        assert nets <= known, f"{name} holds networks of no split: {nets - known}"


def test_validation_files_hold_only_validation_networks():
    for name in VAL_FILES:
        nets = {network_of(tag) for tag, _ in problems(name)}
        assert nets and nets <= VAL_NETS, f"{name}: {nets - VAL_NETS}"


def test_no_validation_key_in_training_files():
    shared = keys(VAL_FILES) & keys(TRAIN_FILES)
    assert not shared, f"{len(shared)} validation keys also in training files, e.g. {sorted(shared)[:3]}"


def test_every_validation_network_is_present():
    conv = {network_of(t) for t, _ in problems("conv_nets_val.txt")}
    gemm = {network_of(t) for t, _ in problems("gemm_llm_val.txt")}
    assert conv == set(CONV_VAL) and gemm == set(GEMM_VAL)
    assert {network_of(t) for t, _ in problems("conv_nets_val2.txt")} == set(CONV_VAL2)
    assert {network_of(t) for t, _ in problems("gemm_llm_val2.txt")} == set(GEMM_VAL2)
    assert {network_of(t) for t, _ in problems("sweep/gemm_val2.txt")} == set(GEMM_VAL2)


@pytest.mark.parametrize("name,lo,hi", [("sweep/gemm_train.txt", 150, 250), ("sweep/gemm_val.txt", 60, 100),
                                        ("sweep/conv_train.txt", 300, 450), ("sweep/conv_val.txt", 100, 150)])
def test_sweep_subsets_are_compact_samples(name, lo, hi):
    ps = problems(name)
    assert lo <= len(ps) <= hi
    assert len({p for _, p in ps}) == len(ps), "duplicate keys"
    full = "gemm" if "gemm" in name else "conv"
    split = "train" if "train" in name else "val"
    sources = {"gemm": {"train": ["gemm_llm_train.txt", "gemm_synth.txt"], "val": ["gemm_llm_val.txt"]},
               "conv": {"train": ["conv_nets_train.txt", "conv_synth.txt"], "val": ["conv_nets_val.txt"]}}
    assert {p for _, p in ps} <= keys(sources[full][split])
    for _, p in ps:
        flops = gemm_flops(p) if full == "gemm" else conv_info(p)[0]
        assert flops <= 2e11, p
    if full == "conv":
        assert {p.split()[0] for _, p in ps} == {"fwd", "bwd_data", "bwd_weight"}
        assert {conv_info(p)[1] for _, p in ps} >= ({"dense", "depthwise", "3d"} | ({"grouped"} if split == "train"
                                                                                   else set()))


def committed_files():
    out = []
    for d, _, files in os.walk(DATA):
        out += [os.path.relpath(os.path.join(d, f), DATA) for f in files if f.endswith(".txt")]
    return sorted(out)


@pytest.mark.skipif(not os.environ.get("TILEPICK_CLI"), reason="TILEPICK_CLI not set")
def test_cli_parses_every_file_to_the_same_canonical_strings():
    cli = os.environ["TILEPICK_CLI"]
    for name in committed_files():
        path = os.path.join(DATA, name)
        res = subprocess.run([cli, "problem", "parse", "--file", path], capture_output=True, text=True)
        assert res.returncode == 0, f"{name}: {res.stderr}"
        parsed = res.stdout.splitlines()
        ours = problems(name)
        assert len(parsed) == len(ours), name
        if name in GENERATED and name not in build_all.LEGACY:
            for (tag, prob), out in zip(ours, parsed):
                assert out == f"{tag}: {prob}", f"{name}: '{prob}' is not canonical ({out})"
