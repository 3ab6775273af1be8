"""Building infini-gram indexes, byte-identical to the real indexer: documents to token bytes, shards, suffix
arrays (libdivsufsort over the token bytes), and the six files of each shard."""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ... import progress
from ...fileio import atomic_output
from . import pointers
from .pointers import sep


def suffix_array(keys: np.ndarray) -> np.ndarray:
    """Positions of the suffixes of ``keys`` in lexicographic order (a shorter prefix first).

    Prefix doubling with numpy: ranks from np.unique, then repeated lexsort on (rank, rank h further on),
    where past-the-end ranks 0 so that a suffix that is a prefix of another sorts first. O(n log^2 n).
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64)
    rank = np.unique(keys, return_inverse=True)[1].astype(np.int64) + 1
    h = 1
    while True:
        nxt = np.zeros(n, np.int64)
        if h < n:
            nxt[: n - h] = rank[h:]
        order = np.lexsort((nxt, rank))
        a, b = rank[order], nxt[order]
        new = np.empty(n, np.int64)
        new[order] = np.concatenate([[1], 1 + np.cumsum((a[1:] != a[:-1]) | (b[1:] != b[:-1]))])
        rank = new
        if rank.max() == n or h >= n:
            return order
        h *= 2


def _sorted_token_suffixes(ds: bytearray, width: int, chunk: int = 1 << 20,
                           fast: bool = True) -> Iterator[np.ndarray]:
    """Byte offsets of the token-aligned suffixes of ``ds`` in the engine's order, in chunks.

    With pydivsufsort (libdivsufsort: O(n log n), 4 bytes per input byte below 2 GiB), the byte-level
    suffix array of the tokenized file filtered to multiples of the token width is exactly the engine's
    order (raw little-endian byte comparison, the shorter suffix first). Without it, numpy prefix
    doubling over the tokens read big-endian (the same order; slower, ~100 bytes per token).
    """
    n = len(ds)
    if n == 0:
        return
    try:
        from pydivsufsort import divsufsort
    except ImportError:  # a platform without its wheel
        divsufsort = None
    if not fast:
        divsufsort = None
    if divsufsort is not None:
        sa = divsufsort(np.frombuffer(ds, np.uint8))
        for start in range(0, n, chunk):
            part = sa[start : start + chunk]
            yield part[part % width == 0] if width > 1 else part
        return
    keys = np.frombuffer(ds, f">u{width}" if width > 1 else "u1").astype(np.uint64)
    order = suffix_array(keys)
    for start in range(0, len(order), chunk):
        yield order[start : start + chunk] * width


class _ShardWriter:
    """One shard's files as the real indexer writes them, accumulated document by document."""

    def __init__(self, width: int, metadata: bool, unigram: bool) -> None:
        self.width, self.unigram = width, unigram
        self.sep = b"\xff" * width
        self.ds = bytearray()
        self.offsets: list[int] = []
        self.meta = bytearray() if metadata else None
        self.metaoff: list[int] = []

    def add(self, token_bytes: bytes, meta_line: bytes | None) -> None:
        self.offsets.append(len(self.ds))
        self.ds += self.sep
        self.ds += token_bytes
        if self.meta is not None:
            self.metaoff.append(len(self.meta))
            self.meta += meta_line or b""

    def write(self, out: Path, suffix: str, show: bool) -> None:
        w = self.width

        def put(kind: str, data: Any) -> None:
            with atomic_output(out / f"{kind}{suffix}") as f:
                f.write(data)

        put("tokenized", self.ds)
        put("offset", np.array(self.offsets, "<u8").tobytes())
        if self.meta is not None:
            put("metadata", self.meta)
            put("metaoff", np.array(self.metaoff, "<u8").tobytes())
        if self.unigram:
            toks = np.frombuffer(self.ds, f"<u{w}" if w > 1 else "u1")
            if w < 4:
                counts = np.bincount(toks, minlength=1 << (8 * w))
                ids = np.flatnonzero(counts)
                counts = counts[ids]
            else:
                ids, counts = np.unique(toks, return_counts=True)
            put("unigram", "".join(f"{a} {b}\n" for a, b in zip(ids.tolist(), counts.tolist(),
                                                                 strict=True)).encode("ascii"))
        k = pointers.width_for(len(self.ds))
        bar = progress.bar(show, total=len(self.ds) // w, desc=f"suffix array{suffix}", unit="tok",
                           unit_scale=True)
        with atomic_output(out / f"table{suffix}") as f:
            if k:
                for part in _sorted_token_suffixes(self.ds, w):
                    f.write(pointers.encode(part, k))
                    bar.update(len(part))
        bar.close()


def _check_build(token_width: int, version: int, shards: int) -> None:
    if token_width not in (1, 2, 4) or version not in (4, 5, 6) or shards < 1:
        raise ValueError("token_width 1, 2 or 4; version 4, 5 or 6; shards >= 1")


def _write_shards(writers: list[_ShardWriter], out: Path, version: int, show: bool) -> Path:
    empty = [s for s, wr in enumerate(writers) if not wr.offsets]
    if empty:  # the real indexer fails on these (log2 of 0 tokens), and the engine dies loading one
        raise ValueError(f"{sum(len(wr.offsets) for wr in writers)} document(s) for {len(writers)} shard(s) "
                         f"leave shard {empty[0]} empty, which the infini-gram engine cannot load: use fewer shards")
    out.mkdir(parents=True, exist_ok=True)
    for s, wr in enumerate(writers):
        if version == 6 and len(writers) == 1:  # the v6 indexer's layout: files without suffix
            wr.write(out, "", show)
        elif version == 6:  # several v6 shards: one directory each
            (out / str(s)).mkdir(parents=True, exist_ok=True)
            wr.write(out / str(s), "", show)
        else:
            wr.write(out, f".{s}", show)
    return out


def _token_bytes(doc: Any, width: int, reverse: bool) -> bytes:
    """A document's tokens as the bytes of the tokenized file (raw bytes pass through for u8)."""
    if width == 1 and isinstance(doc, bytes | bytearray | memoryview):
        b = bytes(doc)
        return b[::-1] if reverse else b
    a = np.asarray(doc)
    if a.size and (a.dtype.kind not in "iu" or int(a.min()) < 0 or int(a.max()) >= sep(width)):
        raise ValueError(f"token ids must be integers in 0..{sep(width) - 1}")
    a = a.astype(f"<u{width}" if width > 1 else "u1")
    return (a[::-1] if reverse else a).tobytes()


def build(docs: Iterable[Any], out_dir: str | os.PathLike[str], *, token_width: int = 2,
          version: int = 4, shards: int = 1, metadata: Iterable[dict[str, Any]] | None = None,
          unigram: bool = True, reverse: bool | None = None, progress_bar: bool = False) -> Path:
    """Write an index of ``docs`` as the real indexer would: v4 (suffixed files), v5 (documents
    reversed) or v6 (files without suffix; one directory per shard when ``shards > 1``).

    ``docs``: token-id sequences (or raw ``bytes`` for u8), streamed. Documents go to shards round-robin
    (doc i to shard i % shards), as the indexer does within one input file and batch. ``reverse``: store
    documents reversed (default: only for v5; the v6 indexer's ``--reversed``). ``metadata``: one
    dict per document, written as the indexer's JSON lines (shaping it as ``{"path": ..., "linenum": ...,
    "metadata": {...}}`` is the caller's choice). Memory: the tokenized corpus plus 4 bytes per byte of it
    for the suffix array (pydivsufsort), the pointer table is written in chunks.
    """
    _check_build(token_width, version, shards)
    writers = [_ShardWriter(token_width, metadata is not None, unigram) for _ in range(shards)]
    metas = iter(metadata) if metadata is not None else None
    rev = version == 5 if reverse is None else reverse
    bar = progress.bar(progress_bar, desc="documents", unit="doc")
    for i, doc in enumerate(docs):
        line = (json.dumps(next(metas)) + "\n").encode("utf-8") if metas is not None else None
        writers[i % shards].add(_token_bytes(doc, token_width, rev), line)
        bar.update()
    bar.close()
    return _write_shards(writers, Path(out_dir), version, progress_bar)




def _jsonl_lines(path: str) -> Iterator[bytes]:
    """The lines of a ``.jsonl`` (or ``.gz``, ``.zst``) file, as bytes."""
    if path.endswith(".gz"):
        import gzip

        with gzip.open(path, "rb") as f:
            yield from f
    elif path.endswith(".zst"):
        import zstandard  # optional: only for .zst corpora, as in the real indexer

        with builtins.open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as z:
            import io

            yield from io.BufferedReader(z)  # type: ignore[arg-type]
    else:
        with builtins.open(path, "rb") as f:
            yield from f


def build_jsonl(data_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, tokenize: Any = None,
                token_width: int = 1, version: int = 4, shards: int = 1, metadata: bool = True,
                unigram: bool = True, reverse: bool | None = None, batch_size: int = 65536,
                progress_bar: bool = False) -> Path:
    """Index ``data_dir/**/*.json*`` as the real indexer does: files in sorted order, the ``text`` field
    tokenized (``tokenize(text)`` -> token ids; UTF-8 bytes for u8 when ``tokenize`` is None), every
    other field kept as metadata, and documents dealt to shards round-robin within each file and batch.
    Lines are streamed: memory is the tokenized corpus, the metadata and the suffix array."""
    _check_build(token_width, version, shards)
    rev = version == 5 if reverse is None else reverse
    root = Path(data_dir)
    files = sorted(str(p) for p in root.glob("**/*.json*") if p.is_file())
    writers = [_ShardWriter(token_width, metadata, unigram) for _ in range(shards)]
    bar = progress.bar(progress_bar, total=sum(os.path.getsize(p) for p in files), desc="reading",
                       unit="B", unit_scale=True)
    for path in files:
        rel = path[len(str(root)) + 1 :]
        for linenum, raw in enumerate(_jsonl_lines(path)):
            obj = json.loads(raw)
            text = obj.pop("text")
            doc = text.encode("utf-8") if tokenize is None else list(tokenize(text))
            line = None
            if metadata:
                line = (json.dumps({"path": rel, "linenum": linenum, "metadata": obj}) + "\n").encode("utf-8")
            writers[(linenum % batch_size) % shards].add(_token_bytes(doc, token_width, rev), line)
            bar.update(len(raw))
    bar.close()
    return _write_shards(writers, Path(out_dir), version, progress_bar)
