"""The main job on the bundled samples: every format sniffed, inspected, validated byte-exact, a
conversion round trip between the word-vector formats, and a timed read of a GloVe file of realistic size.
``wvformats samples`` prints it as a table."""

from __future__ import annotations

import tempfile
import time
from importlib import resources, util
from pathlib import Path
from typing import Any

import numpy as np

from . import api, registry
from .errors import FormatError, OptionError


def sample_dir() -> Path:
    return Path(str(resources.files("wvformats") / "sample_files"))


def sample_files() -> list[Path]:
    return sorted(p for p in sample_dir().iterdir() if not p.name.startswith((".", "_")))


def run_samples(timed_words: int = 400_000) -> tuple[list[dict[str, Any]], bool]:
    """The rows of the main job and whether every check passed; ``timed_words`` x 100 is the size of the
    GloVe file whose read is timed (0: none)."""
    rows: list[dict[str, Any]] = []
    for path in sample_files():
        row: dict[str, Any] = {"sample": path.name}
        try:
            row["sniffed"] = api.sniff(path)
            info = api.inspect(path)
            row["summary"] = _summary(info)
            report = api.validate(path)
            checked = ("byte-identical" if not path.is_dir() else "consistent (offsets, pointers, suffix order)"
                       if row["sniffed"] == "infini-gram" else "consistent (each file checked)")
            row["round_trip"] = checked if report.ok else f"FAIL: {report}"
            row["ok"] = report.ok
        except FormatError as e:
            row.update(round_trip=f"FAIL: {e}", ok=False)
        rows.append(row)
    rows.extend(_conversions())
    if timed_words:
        rows.append(timed_text_read(timed_words))
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


def write_glove(path: Path, words: int, dim: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """Write a GloVe text file of ``words`` x ``dim`` (glove.6B.100d is 400k x 100) straight from numpy, a
    block of lines at a time; its (words, float32 vectors). Every field is 8 bytes: the word ``w%06d ``, a
    number ``0.ddddd `` or ``-0.dddd `` (its space a newline at the end of the line), so a block of lines is
    one gather of 8-byte cells from a table of spellings."""
    if not 0 < words <= 1_000_000 or dim < 1:
        raise OptionError(f"a generated GloVe file has 1 to 1000000 words and 1 or more dimensions, not "
                          f"{words} x {dim}")
    rng = np.random.default_rng(seed)
    u = np.arange(100_000)
    spelled = [b"0.%05d " % i for i in u] + [b"-0.%04d " % (i // 10) for i in u]
    cells = np.frombuffer(b"".join(spelled), "<u8")
    last = np.frombuffer(b"".join(c[:-1] + b"\n" for c in spelled), "<u8")
    value = np.concatenate((u / 100_000, -((u // 10) / 10_000))).astype(np.float32)  # as parsed: via float64
    names = [f"w{i:06d}" for i in range(words)]
    codes = np.frombuffer(b"".join(f"{w} ".encode() for w in names), "<u8")
    vectors = np.empty((words, dim), np.float32)
    step = 8192
    with open(path, "wb") as f:
        for a in range(0, words, step):
            n = min(step, words - a)
            k = rng.integers(0, len(cells), (n, dim))
            vectors[a : a + n] = value[k]
            block = np.empty((n, dim + 1), "<u8")
            block[:, 0], block[:, 1:-1], block[:, -1] = codes[a : a + n], cells[k[:, :-1]], last[k[:, -1]]
            f.write(block)
    return names, vectors


def timed_text_read(words: int, dim: int = 100) -> dict[str, Any]:
    """A GloVe file of ``words`` x ``dim`` generated in a temporary folder, then read with ``wv.read``: the
    row gives the read's seconds beside the raw read of the same bytes, and checks every word and value."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "generated.glove"
        names, vectors = write_glove(path, words, dim)
        size = path.stat().st_size
        t = time.perf_counter()
        with open(path, "rb", buffering=0) as f:  # the floor: the bytes into one buffer, nothing parsed
            buf = np.empty(size, np.uint8)
            view, got = memoryview(buf), 0
            while got < size:
                got += f.readinto(view[got:])
        floor = time.perf_counter() - t
        del buf, view
        t = time.perf_counter()
        emb = api.read(path, "glove")
        seconds = time.perf_counter() - t
        same = emb.words == names and np.array_equal(emb.vectors.view(np.uint32), vectors.view(np.uint32))
        sniffed = api.sniff(path)
    mb = size / 1e6
    how = "pyarrow's CSV reader" if util.find_spec("pyarrow") else "numpy's parser (pyarrow is missing: 3-4x slower)"
    said = f"{how}: read in {seconds:.2f} s ({mb / seconds:.0f} MB/s), {seconds / floor:.1f}x the raw read ({floor:.3f} s)"
    return {"sample": f"generated {words} x {dim} GloVe ({mb:.0f} MB)", "sniffed": sniffed,
            "summary": f"words={len(emb)}, dim={emb.dim}", "seconds": round(seconds, 3),
            "round_trip": f"same words and values; {said}" if same else f"FAIL: values differ; {said}",
            "ok": same}


def table(rows: list[dict[str, Any]]) -> str:
    cols = ["sample", "sniffed", "summary", "round_trip"]
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols), "  ".join("-" * widths[c] for c in cols)]
    for r in rows:
        lines.append("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in cols))
    ok = sum(1 for r in rows if r["ok"])
    lines.append(f"\n{ok} of {len(rows)} checks passed")
    return "\n".join(lines)
