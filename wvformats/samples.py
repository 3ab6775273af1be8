"""The main job on the bundled samples: every format sniffed, inspected, validated byte-exact, and a
conversion round trip between the word-vector formats. ``wvformats samples`` prints it as a table."""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from . import api, registry
from .errors import FormatError


def sample_dir() -> Path:
    return Path(str(resources.files("wvformats") / "sample_files"))


def sample_files() -> list[Path]:
    return sorted(p for p in sample_dir().iterdir() if not p.name.startswith((".", "_")))


def run_samples() -> tuple[list[dict[str, Any]], bool]:
    rows: list[dict[str, Any]] = []
    for path in sample_files():
        row: dict[str, Any] = {"sample": path.name}
        try:
            row["sniffed"] = api.sniff(path)
            info = api.inspect(path)
            row["summary"] = _summary(info)
            report = api.validate(path)
            checked = "consistent (offsets, pointers, suffix order)" if path.is_dir() else "byte-identical"
            row["round_trip"] = checked if report.ok else f"FAIL: {report}"
            row["ok"] = report.ok
        except FormatError as e:
            row.update(round_trip=f"FAIL: {e}", ok=False)
        rows.append(row)
    rows.extend(_conversions())
    return rows, all(r["ok"] for r in rows)


def _summary(info: dict[str, Any]) -> str:
    keys = [k for k in ("words", "dim", "tensors", "pieces", "tokens", "documents", "chunks") if k in info]
    return ", ".join(f"{k}={info[k]}" for k in keys)


def _conversions() -> list[dict[str, Any]]:
    """leader -> every other word-vector format -> back: words and vector bits must survive."""
    src = sample_dir() / "sample.leader"
    if not src.exists():
        return []
    wordvec = ["word2vec-binary", "word2vec-text", "glove"]
    ref = api.read(src)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in wordvec:
            if name not in registry.load():
                continue
            dst = Path(tmp) / f"converted.{name}"
            api.convert(src, dst, name)
            back = api.read(dst, name)
            same = back.words == ref.words and np.array_equal(
                back.vectors.view(np.uint32), ref.vectors.view(np.uint32))
            rows.append({"sample": f"sample.leader -> {name}", "sniffed": api.sniff(dst),
                         "summary": f"words={len(back)}, dim={back.dim}",
                         "round_trip": "same words, bit-identical vectors" if same else "FAIL: values differ",
                         "ok": same})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    cols = ["sample", "sniffed", "summary", "round_trip"]
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols), "  ".join("-" * widths[c] for c in cols)]
    for r in rows:
        lines.append("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in cols))
    ok = sum(1 for r in rows if r["ok"])
    lines.append(f"\n{ok} of {len(rows)} checks passed")
    return "\n".join(lines)
