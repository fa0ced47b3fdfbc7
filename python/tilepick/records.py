"""Sweep record files (docs/sweep.md, format tilepick-sweep/1): reading, problem-string fields, oracle.

Needs only numpy and pandas (no tilepick C++ bindings).

    header, df = read_records(["a.csv.gz", "b.csv.gz"])
    per_problem = oracle(df)
"""
from __future__ import annotations

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
OPS = {"gemm": "gemm", "fwd": "conv_fwd", "bwd_data": "conv_bwd_data", "bwd_d": "conv_bwd_data",
       "bwd_weight": "conv_bwd_weight", "bwd_w": "conv_bwd_weight"}
DTYPES = {"f16": "f16", "bf16": "bf16", "e4m3": "e4m3", "e5m2": "e5m2", "f32": "f32", "fp16": "f16",
          "fp8e4m3": "e4m3", "fp8_e4m3": "e4m3", "fp8e5m2": "e5m2", "fp8_e5m2": "e5m2", "fp32": "f32",
          "tf32": "f32"}
CONV_SIZES = {"g": 1, "mb": 1, "ic": 1, "id": 1, "ih": 1, "iw": 1, "oc": 1, "od": None, "oh": None, "ow": None,
              "kd": 1, "kh": 1, "kw": 1, "sd": 1, "sh": 1, "sw": 1, "pd": 0, "ph": 0, "pw": 0,
              "dd": 1, "dh": 1, "dw": 1}
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
    df["op"] = df["problem"].str.strip().str.split(n=1).str[0].map(OPS).fillna("unknown")
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

def problem_op(problem: str) -> str:
    """gemm | conv_fwd | conv_bwd_data | conv_bwd_weight | unknown, from the first token."""
    first = problem.split(maxsplit=1)[0] if problem.strip() else ""
    return OPS.get(first, "unknown")


def is_dtype_token(tok: str) -> bool:
    """A problem's dtype token: one dtype, or three (a:b:c)."""
    return tok.count(":") in (0, 2) and all(part in DTYPES for part in tok.split(":"))


def problem_fields(problem: str) -> dict:
    """The sizes of a problem string (include/tilepick/problem.hpp grammar) with defaults filled in.

    gemm: op, layout, batch, m, n, k, dtypes (a, b, c), options {acc, alpha, beta, ep};
    conv: op, ndim, g mb ic id ih iw oc kd kh kw sd sh sw pd ph pw dd dh dw, dtypes, options {ep}.
    Unknown tokens go to options[token] = "" so that they still distinguish problems.
    """
    tokens = problem.split()
    op = problem_op(problem)
    out: dict = {"op": op, "dtypes": None, "options": {}}
    if op == "unknown":
        return out
    if op == "gemm":
        out.update(layout=None, batch=1, m=None, n=None, k=None)
    else:
        out.update({k: v for k, v in CONV_SIZES.items()})
        out["ndim"] = 2
    for tok in tokens[1:]:
        key, num = _split_size(tok)
        if "=" in tok:
            name, value = tok.split("=", 1)
            out["options"][name] = value
        elif op == "gemm" and out["layout"] is None and len(tok) == 3 and set(tok) <= {"r", "c"}:
            out["layout"] = tok
        elif op == "gemm" and key in ("m", "n", "k", "batch"):
            out[key] = num
        elif op != "gemm" and key in CONV_SIZES:
            out[key] = num
            if key in ("id", "kd", "sd", "pd", "dd", "od"):
                out["ndim"] = 3
        elif is_dtype_token(tok):
            parts = [DTYPES[p] for p in tok.split(":")]
            out["dtypes"] = tuple(parts * 3 if len(parts) == 1 else parts)
        elif op != "gemm" and tok in ("nhwgc", "ndhwgc"):
            continue
        else:
            out["options"][tok] = ""
    return out


def _split_size(tok: str):
    i = len(tok)
    while i > 0 and tok[i - 1].isdigit():
        i -= 1
    if 0 < i < len(tok) and tok[:i].isalpha():
        return tok[:i], int(tok[i:])
    return None, None


_OPTION_DEFAULTS = {"acc": "f32", "alpha": "1", "beta": "0", "ep": "none"}


def problem_key(problem: str) -> tuple:
    """A hashable identity that ignores token order, aliases and defaulted tokens, so a problems file
    written by hand matches the canonical strings in records."""
    f = problem_fields(problem)
    opts = []
    for name, value in sorted(f["options"].items()):
        value, default = _normal_option(name, value), _normal_option(name, _OPTION_DEFAULTS.get(name))
        if value != default:
            opts.append((name, value))
    sizes = tuple((k, f[k]) for k in sorted(f) if k not in ("op", "dtypes", "options", "od", "oh", "ow"))
    return (f["op"], sizes, f["dtypes"], tuple(opts)) if f["op"] != "unknown" else ("unknown", problem.strip())


def _normal_option(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if name == "acc":
        return DTYPES.get(value, value)
    if name in ("alpha", "beta"):
        try:
            return repr(float(value))
        except ValueError:
            return value
    return value


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
