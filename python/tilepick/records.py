"""Sweep record files (docs/sweep.md, format tilepick-sweep/1): reading, problem-string fields, oracle.

Needs numpy, pandas and the extension (tilepick._core: problem strings are parsed by the C++ grammar).

    header, df = read_records(["a.csv.gz", "b.csv.gz"])
    per_problem = oracle(df)
"""
from __future__ import annotations

import functools
import io
import json
import os
import warnings
import zlib
from typing import Iterable

import numpy as np
import pandas as pd

STATUSES = ("ok", "wrong", "crash", "timeout", "error", "unsupported")
FAILED_STATUSES = ("wrong", "crash", "timeout", "error")
STRING_COLUMNS = ("problem", "config", "status", "detail")
REQUIRED_COLUMNS = ("problem", "config", "status", "median_us")
# vendor pseudo-config -> (library, kind); kind "best" covers cuDNN's exhaustive search.
VENDOR_CONFIGS = {
    "vendor=cublaslt:heur": ("cublaslt", "heur"),
    "vendor=cublaslt:best": ("cublaslt", "best"),
    "vendor=cudnn:heur": ("cudnn", "heur"),
    "vendor=cudnn:exhaustive": ("cudnn", "best"),
}
_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16


# ----------------------------------------------------------------------------- reading

def _gunzip_members(raw: bytes, path: str) -> bytes:
    """Concatenated text of every complete gzip member; warns and stops at a truncated or damaged one."""
    view, pos, n, out = memoryview(raw), 0, len(raw), []
    while pos < n:
        if raw[pos:pos + 2] != _GZIP_MAGIC:
            if any(raw[pos:]):  # zero padding after the last member is harmless
                warnings.warn(f"{path}: bytes after offset {pos} are not a gzip member; ignored them")
            break
        d, member, start = zlib.decompressobj(wbits=31), [], pos
        try:
            while not d.eof and pos < n:
                chunk = view[pos:pos + _CHUNK]
                member.append(d.decompress(chunk))
                pos += len(chunk) - (len(d.unused_data) if d.eof else 0)
        except zlib.error as e:
            warnings.warn(f"{path}: gzip member at offset {start} is damaged ({e}); read the members before it")
            break
        if not d.eof:
            warnings.warn(f"{path}: last gzip member (offset {start}, {n - start} bytes) is truncated, "
                          "as when a sweep is killed mid-write; read the complete members before it")
            break
        out.extend(member)
    return b"".join(out)


def _parse_text(text: str, path: str) -> tuple[dict, pd.DataFrame]:
    lines = text.splitlines()
    headers = []
    for line in (x for x in lines if x.startswith("#")):
        body = line[1:].strip()
        if body.startswith("{"):
            try:
                headers.append(json.loads(body))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: header line is not valid JSON: {e}") from None
    if not headers:
        warnings.warn(f"{path}: no '# {{...}}' header line; header is empty")
    header = headers[0] if headers else {}
    for h in headers[1:]:  # a resumed sweep appends its own header
        if _device_name(h) != _device_name(header):
            raise ValueError(f"{path}: appended run on device {_device_name(h)!r} differs from "
                             f"{_device_name(header)!r} of the first header")
    data = [x for x in lines if x.strip() and not x.startswith("#")]
    if not data:
        raise ValueError(f"{path}: no CSV column row (expected 'problem,config,status,...')")
    columns = data[0]
    rows = [x for x in data[1:] if x != columns]  # a resumed sweep repeats the column row; keep one
    df = pd.read_csv(io.StringIO("\n".join([columns] + rows)), dtype={c: str for c in STRING_COLUMNS},
                     keep_default_na=False, na_values=[""])
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; have {', '.join(df.columns)}")
    for col in STRING_COLUMNS:
        if col in df:
            df[col] = df[col].fillna("")
    for col in ("median_us", "tflops", "gbps"):  # numeric even when empty or all blank
        if col in df and df[col].dtype.kind != "f":
            num = pd.to_numeric(df[col], errors="coerce").astype(float)
            bad = df.loc[num.isna() & df[col].notna(), col]
            if len(bad):
                raise ValueError(f"{path}: column {col} has non-numeric values, e.g. {bad.iloc[0]!r}")
            df[col] = num
    unknown = sorted(set(df["status"]) - set(STATUSES))
    if unknown:
        warnings.warn(f"{path}: unknown status value(s) {unknown}; expected one of {', '.join(STATUSES)}")
    return header, df


def device_of(header: dict) -> dict:
    """The device block of a record-file header: the sweep writes "devices" (one per GPU it ran on;
    the first), older files "device". {} when there is none."""
    dev = header.get("device")
    if isinstance(dev, dict):
        return dev
    devs = header.get("devices")
    return devs[0] if isinstance(devs, list) and devs and isinstance(devs[0], dict) else {}


def _device_name(header: dict):
    return device_of(header).get("name")


def read_one(path: str) -> tuple[dict, pd.DataFrame]:
    """One record file (gzip members or plain text) -> (header, rows without helper columns)."""
    with open(path, "rb") as f:
        raw = f.read()
    data = _gunzip_members(raw, path) if raw[:2] == _GZIP_MAGIC else raw
    text = data.decode("utf-8", errors="replace")
    if text and not text.endswith("\n"):  # a write cut mid-row
        cut = text.rfind("\n") + 1
        warnings.warn(f"{path}: last line is incomplete ({text[cut:][:60]!r}...); ignored it")
        text = text[:cut]
    return _parse_text(text, path)


def read_records(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> tuple[dict, pd.DataFrame]:
    """Reads one or several record files into (header, df).

    header is the first file's header plus `record_files`: [{path, header, rows}] per file.
    Raises ValueError when the files' device names differ. df has the file's columns (numeric ones
    as numbers) plus: source (path), op, is_vendor, vendor_lib, vendor_kind (heur | best), flops and
    bytes (from tflops / gbps and median_us; NaN where not timed).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ValueError("read_records: no record files given")
    headers, frames = [], []
    for p in paths:
        h, df = read_one(p)
        if headers and _device_name(h) != _device_name(headers[0]):
            raise ValueError(f"{p}: device {_device_name(h)!r} differs from {_device_name(headers[0])!r} "
                             f"of {paths[0]}; records of different devices cannot be compared")
        df.insert(0, "source", p)
        headers.append(h)
        frames.append(df)
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    header = dict(headers[0])
    header["record_files"] = [{"path": p, "header": h, "rows": len(f)} for p, h, f in zip(paths, headers, frames)]
    return header, add_helper_columns(df)


def add_helper_columns(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    ops = {p: problem_op(p) for p in df["problem"].unique()}
    df["op"] = df["problem"].map(ops)
    config = df["config"].str.strip()
    df["is_vendor"] = config.str.startswith("vendor=")
    vendor = config.map(VENDOR_CONFIGS)
    df["vendor_lib"] = config.where(df["is_vendor"], "").str.slice(len("vendor=")).str.split(":").str[0]
    df["vendor_kind"] = vendor.str[1].fillna("")
    unknown = sorted(set(config[df["is_vendor"] & vendor.isna()]))
    if unknown:
        warnings.warn(f"unknown vendor pseudo-config(s) {unknown}; expected {', '.join(VENDOR_CONFIGS)}")
    us = df["median_us"].astype(float)
    timed = (df["status"] == "ok") & (us > 0)
    for col, src, scale in (("flops", "tflops", 1e12), ("bytes", "gbps", 1e9)):
        df[col] = (df[src].astype(float) * scale * us * 1e-6).where(timed) if src in df else np.nan
    return df


# ----------------------------------------------------------------------------- problem strings
# Parsed by the C++ grammar (include/tilepick/problem.hpp) through the extension: one parser for both sides.

@functools.lru_cache(maxsize=1 << 16)
def _parsed(problem: str) -> tuple[str, dict] | None:
    """(canonical string, problem_json) of a problem string, or None when the grammar rejects it."""
    from tilepick import _core

    try:
        return _core.canonical_problem(problem), json.loads(_core.problem_json(problem))
    except ValueError:
        return None


def problem_op(problem: str) -> str:
    """gemm | conv_fwd | conv_bwd_data | conv_bwd_weight, or unknown for a string the grammar rejects."""
    parsed = _parsed(problem)
    return parsed[1]["op"] if parsed else "unknown"


def dtype_token(problem: str) -> str:
    """The canonical dtype token of a problem ("bf16", "e4m3:e4m3:bf16"), "" when the grammar rejects it."""
    parsed = _parsed(problem)
    if not parsed:
        return ""
    j = parsed[1]
    types = (j["a"], j["b"], j["c"]) if j["op"] == "gemm" else (j["x"], j["w"], j["y"])
    return types[0] if len(set(types)) == 1 else ":".join(types)


def problem_fields(problem: str) -> dict:
    """The sizes of a problem with defaults filled in (names as in the problem grammar).

    gemm: op, layout, batch, m, n, k, dtypes (a, b, c), options (acc, alpha, beta, ep where not the default);
    conv: op, ndim, g mb ic id ih iw oc kd kh kw sd sh sw pd ph pw dd dh dw, dtypes (x, w, y), options (ep).
    op "unknown" (and nothing else) for a string the grammar rejects.
    """
    parsed = _parsed(problem)
    if not parsed:
        return {"op": "unknown", "dtypes": None, "options": {}}
    j = parsed[1]
    ep = "+".join(x for x in ("bias" if j["bias"] else "", j["act"] if j["act"] != "none" else "") if x) or "none"
    options = {"ep": ep} if ep != "none" else {}
    if j["op"] == "gemm":
        if j["acc"] != "f32":
            options["acc"] = j["acc"]
        for name, default in (("alpha", 1.0), ("beta", 0.0)):
            if j[name] != default:
                options[name] = repr(float(j[name]))
        return {"op": "gemm", "layout": j["layout"], "batch": j["batch"], "m": j["m"], "n": j["n"], "k": j["k"],
                "dtypes": (j["a"], j["b"], j["c"]), "options": options}
    out = {"op": j["op"], "ndim": j["ndim"], "g": j["g"], "mb": j["mb"], "ic": j["ic"], "oc": j["oc"],
           "dtypes": (j["x"], j["w"], j["y"]), "options": options}
    for i, axis in enumerate("dhw"):
        out["i" + axis], out["k" + axis] = j["in"][i], j["filter"][i]
        out["s" + axis], out["p" + axis], out["d" + axis] = j["stride"][i], j["pad"][i], j["dilation"][i]
    return out


def problem_key(problem: str) -> str:
    """A problem's identity whatever its token order, aliases and defaulted tokens (its canonical string), so
    that a problems file written by hand matches the records; a string the grammar rejects is its own key."""
    parsed = _parsed(problem)
    return parsed[0] if parsed else "unknown: " + problem.strip()


def read_problem_tags(path: str) -> dict:
    """problem_key -> `name:` tag of a problems file (one problem per line, '#' comments)."""
    tags = {}
    with open(path) as f:
        for line in f:
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            first, _, rest = text.partition(" ")
            if first.endswith(":") and rest.strip():
                tags.setdefault(problem_key(rest), first[:-1])
    return tags


# ----------------------------------------------------------------------------- oracle

def oracle(df: pd.DataFrame) -> pd.DataFrame:
    """One row per problem (first-appearance order), indexed by problem string.

    Columns: op; counts over the non-vendor pairs (n_configs, n_ok, n_failed = wrong + crash +
    timeout + error, n_<status> each); oracle_config / oracle_us / oracle_tflops / oracle_gbps (the
    fastest ok non-vendor pair, ties to the first row); flops and bytes; vendor_heur, vendor_heur_algo,
    vendor_heur_us (the vendor heuristic pick); vendor_best, vendor_best_algo, vendor_best_us (the
    fastest ok vendor row: cuBLASLt best / cuDNN exhaustive, or the heuristic pick when it was faster).
    The vendor names are the pseudo-configs without `vendor=`; *_algo is the record's `detail`.
    """
    problems = pd.unique(df["problem"])
    out = pd.DataFrame(index=pd.Index(problems, name="problem"))
    out["op"] = df.groupby("problem", sort=False)["op"].first()
    kernels = df[~df["is_vendor"]]
    out["n_configs"] = kernels.groupby("problem").size().reindex(problems, fill_value=0)
    for s in STATUSES:
        out[f"n_{s}"] = kernels[kernels["status"] == s].groupby("problem").size().reindex(problems, fill_value=0)
    out["n_failed"] = out[[f"n_{s}" for s in FAILED_STATUSES]].sum(axis=1)
    timed = df[(df["status"] == "ok") & (df["median_us"].astype(float) > 0)]
    best = _fastest(timed[~timed["is_vendor"]])
    out["oracle_config"] = best["config"]
    out["oracle_us"] = best["median_us"]
    out["oracle_tflops"] = best["tflops"] if "tflops" in best else np.nan
    out["oracle_gbps"] = best["gbps"] if "gbps" in best else np.nan
    out["flops"] = timed.groupby("problem")["flops"].median()
    out["bytes"] = timed.groupby("problem")["bytes"].median()
    vendor = timed[timed["is_vendor"]]
    for kind, rows in (("heur", vendor[vendor["vendor_kind"] == "heur"]), ("best", vendor)):
        pick = _fastest(rows)
        out[f"vendor_{kind}"] = pick["config"].str.replace("vendor=", "", regex=False)
        out[f"vendor_{kind}_algo"] = pick["detail"] if "detail" in pick else ""
        out[f"vendor_{kind}_us"] = pick["median_us"]
    for col in ("oracle_config", "vendor_heur", "vendor_heur_algo", "vendor_best", "vendor_best_algo"):
        out[col] = out[col].fillna("")
    return out


def _fastest(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return rows.set_index("problem")
    idx = rows["median_us"].astype(float).groupby(rows["problem"]).idxmin()
    return rows.loc[idx.values].set_index("problem")
