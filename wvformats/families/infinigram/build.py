"""Building infini-gram indexes, byte-identical to the real indexer: documents to token bytes, shards, suffix
arrays (libdivsufsort over the token bytes), and the six files of each shard."""

from __future__ import annotations

import builtins
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ... import progress
from ...fileio import atomic_output
from ...schemas import infinigram as schema
from . import pointers
from .pointers import sep
from .sniff import KINDS


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


def _unigram_lines(chunks: Iterable[np.ndarray], width: int, batch: int = 4096) -> Iterator[bytes]:
    """The indexer's unigram file: ``"{id} {count}\n"`` for every token id present, ascending, counted
    over the token ``chunks`` of a shard (SEP included); yielded ``batch`` lines at a time (tens of thousands of
    ids as Python strings at once held an out-of-core parent 10 MB over its share)."""
    ids = counts = np.zeros(0, np.int64)
    total = np.zeros(1 << (8 * width), np.int64) if width < 4 else None
    for toks in chunks:
        if total is not None:
            total += np.bincount(toks, minlength=len(total))
        else:  # u32: merge each chunk's distinct ids into the running ones
            u, c = np.unique(toks, return_counts=True)
            ids, inv = np.unique(np.concatenate([ids, u.astype(np.int64)]), return_inverse=True)
            counts = np.bincount(inv, weights=np.concatenate([counts, c]), minlength=len(ids)).astype(np.int64)
    if total is not None:
        ids = np.flatnonzero(total)
        counts = total[ids]
    for s in range(0, len(ids), batch):
        pairs = zip(ids[s : s + batch].tolist(), counts[s : s + batch].tolist(), strict=True)
        yield "".join(f"{a} {b}\n" for a, b in pairs).encode("ascii")


def _unigram_text(chunks: Iterable[np.ndarray], width: int) -> bytes:
    """:func:`_unigram_lines` as one bytes object."""
    return b"".join(_unigram_lines(chunks, width))


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

    def write(self, path: Callable[[str], Path], show: bool) -> None:
        """Write the shard's files, each to ``path(kind)``."""
        w = self.width

        def put(kind: str, data: Any) -> None:
            with atomic_output(path(kind)) as f:
                f.write(data)

        put("tokenized", self.ds)
        put("offset", np.array(self.offsets, "<u8").tobytes())
        if self.meta is not None:
            put("metadata", self.meta)
            put("metaoff", np.array(self.metaoff, "<u8").tobytes())
        if self.unigram:
            put("unigram", _unigram_text([np.frombuffer(self.ds, f"<u{w}" if w > 1 else "u1")], w))
        k = schema.pointer_width(len(self.ds))
        bar = progress.bar(show, total=len(self.ds) // w, desc=f"suffix array {path('table').name}", unit="tok",
                           unit_scale=True)
        with atomic_output(path("table")) as f:
            if k:
                for part in _sorted_token_suffixes(self.ds, w):
                    f.write(pointers.encode(part, k))
                    bar.update(len(part))
        bar.close()


def _check_build(token_width: int, version: int, shards: int) -> None:
    if token_width not in schema.INFINIGRAM_TOKEN_WIDTHS or version not in schema.INFINIGRAM_VERSIONS or shards < 1:
        raise ValueError("token_width 1, 2 or 4; version 4, 5 or 6; shards >= 1")


def _refuse_empty(docs_per_shard: list[int]) -> None:
    empty = [s for s, n in enumerate(docs_per_shard) if not n]
    if empty:  # the real indexer fails on these (log2 of 0 tokens), and the engine dies loading one
        raise ValueError(f"{sum(docs_per_shard)} document(s) for {len(docs_per_shard)} shard(s) leave shard "
                         f"{empty[0]} empty, which the infini-gram engine cannot load: use fewer shards")


def _write_shards(writers: list[_ShardWriter], out: Path, version: int, show: bool) -> Path:
    _refuse_empty([len(wr.offsets) for wr in writers])
    out.mkdir(parents=True, exist_ok=True)
    for s, wr in enumerate(writers):
        folder = _final_path(out, "table", s, version, len(writers)).parent
        folder.mkdir(parents=True, exist_ok=True)  # (v6 shards: a folder each)
        wr.write(lambda kind, s=s: _final_path(out, kind, s, version, len(writers)), show)
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
          unigram: bool = True, reverse: bool | None = None, progress_bar: bool = False,
          max_memory: int | str | None = None, workers: int = 1, engine: str = "local",
          scheduler: Any = None) -> Path:
    """Write an index of ``docs`` as the real indexer would: v4 (suffixed files), v5 (documents
    reversed) or v6 (files without suffix; one directory per shard when ``shards > 1``).

    ``docs``: token-id sequences (or raw ``bytes`` for u8), streamed. Documents go to shards round-robin
    (doc i to shard i % shards), as the indexer does within one input file and batch. ``reverse``: store
    documents reversed (default: only for v5; the v6 indexer's ``--reversed``). ``metadata``: one
    dict per document, written as the indexer's JSON lines (shaping it as ``{"path": ..., "linenum": ...,
    "metadata": {...}}`` is the caller's choice). Memory: the tokenized corpus plus 4 bytes per byte of it
    for the suffix array (pydivsufsort), the pointer table is written in chunks.

    Past one machine's memory (the same bytes; see :func:`_build_out_of_core`): ``max_memory`` (bytes or
    ``"400M"``, ``"2G"``) bounds the build, the corpus spooled to disk and each shard's suffix array
    sorted in parts and merged; ``workers``: processes for the parts and shards (the budget is shared
    among them); ``engine="dask"`` with ``scheduler`` (an address or a ``distributed.Client``) runs them
    on a Dask cluster (then ``max_memory`` is each task's). An interrupted out-of-core build resumes
    where it stopped when called again with the same arguments (the same ``docs``).
    """
    _check_build(token_width, version, shards)
    rev = version in schema.INFINIGRAM_REVERSED if reverse is None else reverse

    def feed(writers: list[Any]) -> None:
        metas = iter(metadata) if metadata is not None else None
        bar = progress.bar(progress_bar, desc="documents", unit="doc")
        for i, doc in enumerate(docs):
            line = (json.dumps(next(metas)) + "\n").encode("utf-8") if metas is not None else None
            writers[i % shards].add(_token_bytes(doc, token_width, rev), line)
            bar.update()
        bar.close()

    options = {"token_width": token_width, "version": version, "shards": shards, "reverse": rev,
               "metadata": metadata is not None, "unigram": unigram}
    if max_memory is not None or workers != 1 or engine != "local":
        return _build_out_of_core(feed, Path(out_dir), options, max_memory=max_memory, workers=workers,
                                  engine=engine, scheduler=scheduler, show=progress_bar)
    writers = [_ShardWriter(token_width, metadata is not None, unigram) for _ in range(shards)]
    feed(writers)
    return _write_shards(writers, Path(out_dir), version, progress_bar)


class _SpoolWriter:
    """One shard's files written to disk as the documents come (the input of an out-of-core build)."""

    def __init__(self, folder: Path, shard: int, width: int, metadata: bool, unigram: bool,
                 early: _EarlyParts | None = None) -> None:
        self.width, self.unigram, self.sep = width, unigram, b"\xff" * width
        kinds = ("tokenized", "offset", "metadata", "metaoff") if metadata else ("tokenized", "offset")
        self.paths = {kind: _work_file(folder, kind, shard) for kind in kinds}
        self.files = {kind: builtins.open(p, "wb", buffering=1 << 18) for kind, p in self.paths.items()}
        self.size = self.meta_size = self.docs = 0
        self.shard, self.early = shard, early
        self.check = early.length if early is not None else -1  # (the size at which to offer parts again)

    def add(self, token_bytes: bytes, meta_line: bytes | None) -> None:
        f = self.files
        f["offset"].write(schema.offset_entry(self.size))
        f["tokenized"].write(self.sep)
        f["tokenized"].write(token_bytes)
        self.size += len(self.sep) + len(token_bytes)
        self.docs += 1
        if self.early is not None and self.size >= self.check:
            f["tokenized"].flush()  # (the workers read the window from the file)
            self.early.grown(self.shard, self.size)
            self.check = self.size + self.early.length
        if "metadata" in f:
            line = meta_line or b""
            f["metaoff"].write(schema.offset_entry(self.meta_size))
            f["metadata"].write(line)
            self.meta_size += len(line)

    def close(self) -> None:
        for f in self.files.values():
            f.close()
        if self.unigram:
            path = self.paths["tokenized"]
            self.paths["unigram"] = path.with_name("unigram" + path.suffix)
            dtype = f"<u{self.width}" if self.width > 1 else "u1"

            def chunks() -> Iterator[np.ndarray]:
                with builtins.open(path, "rb") as f:
                    while len(toks := np.fromfile(f, dtype, 1 << 17)):  # (bincount widens to int64: 1 MB)
                        yield toks

            with atomic_output(self.paths["unigram"], fsync=False) as f:
                for lines in _unigram_lines(chunks(), self.width):
                    f.write(lines)


EARLY_WIDTH = 4  # the pointer width of parts sorted while the documents spool: a corpus's from 16 MiB to 4 GiB


class _EarlyParts:
    """Parts sorted by the workers while the parent still spools the documents, so that reading them (a tokenizer,
    a generator) overlaps the sorts. A part goes as soon as the spool holds its window and more, with pointers of
    EARLY_WIDTH bytes or the width of the size spooled so far if larger; :func:`_tables` keeps it when the shard's
    final width and range are the same, has its pointers rewritten when only the width differs (``sort_part``
    does: cheap beside a sort), and sorts again the rare part whose window could not order its suffixes alone
    (``sort_part(early=True)`` gives those up: their ties would read the corpus past the spool)."""

    def __init__(self, work: Path, width: int, budget: int, eng: Any) -> None:
        from . import outofcore

        self.work, self.width, self.eng = work, width, eng
        self.length = outofcore.part_length(budget, width)
        self.ext = outofcore.extension(self.length)
        self.next: dict[int, int] = {}
        self.parts: dict[tuple[int, int], tuple[Any, int, int, int]] = {}  # (shard, i) -> (future, k, start, end)

    def grown(self, shard: int, size: int) -> None:
        from . import outofcore

        k, i = max(EARLY_WIDTH, schema.pointer_width(size)), self.next.get(shard, 0)
        while (i + 1) * self.length + self.ext < size:  # (strictly inside: the window does not end the corpus)
            a, b = i * self.length, (i + 1) * self.length
            fut = self.eng.submit(outofcore.sort_part, str(_work_file(self.work, "tokenized", shard)), self.width, k,
                                  a, b, str(self.work / f"part.{shard}.{i}"), True)
            self.parts[(shard, i)] = (fut, k, a, b)
            i += 1
        self.next[shard] = i


TAPER = 4  # the last ranges of a shard's merge with workers that halve in size (outofcore.range_shares)
WORK = ".wvformats-work"  # inside the output folder while an out-of-core build runs (kept to resume)


def _final_path(out: Path, kind: str, shard: int, version: int, shards: int) -> Path:
    """Where the indexer of ``version`` puts a shard's file (the schema names it)."""
    return out / schema.infinigram_name(kind, shard, version=version, shards=shards)


def _work_file(work: Path, kind: str, shard: int) -> Path:
    """A shard's file in the work folder of an out-of-core build: laid out as a version 4 index."""
    return work / schema.infinigram_name(kind, shard, version=4, shards=1)


def _build_out_of_core(feed: Any, out: Path, options: dict[str, Any], *, max_memory: int | str | None,
                       workers: int, engine: str, scheduler: Any, show: bool) -> Path:
    """The same files as the in-memory build, under a memory budget and in resumable steps.

    1. The documents are spooled into ``out/.wvformats-work``: each shard's tokenized, offset, metadata
       and metaoff files as they come, then its unigram counts read back in chunks; a manifest with
       each file's size and CRC-32 marks the step finished (a resumed build checks them and does not
       read ``docs`` again).
    2. Each shard's suffix array: parts sorted within the budget, then merged into its
       table (:mod:`.outofcore`), as tasks of the engine; finished parts and tables are kept, checked
       and reused.
    3. The files are moved to their places in ``out`` and the work folder is removed.

    Disk: the index itself, plus while a shard is sorted and merged its parts: k + AUX_SIZE (14) bytes per
    token (each suffix's pointer, and its LCP with the one before it in its part and the bytes after that,
    which the merge orders by without reading the corpus), freed as the merge consumes them.
    """
    from . import engines, outofcore

    if workers < 1:
        raise ValueError("workers >= 1")
    budget = outofcore.parse_size(max_memory) if max_memory is not None else None
    task_budget = None  # (refused up front when too small)
    if budget is not None:
        task_budget = outofcore.task_budget(budget, workers if engine == "local" else 1, options["token_width"])
    eng = engines.engine(engine, workers, scheduler)  # refuses a wrong engine before anything is written
    report = (lambda msg: print(f"infini-gram: {msg}", file=sys.stderr, flush=True)) if show else (lambda _: None)
    work = out / WORK
    work.mkdir(parents=True, exist_ok=True)
    shards, width = options["shards"], options["token_width"]
    manifest = work / "input.json"
    early = None
    if _spooled(manifest, options):
        report("documents: reusing the spooled shards")
    else:
        for old in work.glob("part.*"):  # (sorted from an earlier spool: the documents are read again)
            old.unlink()
        if task_budget is not None and isinstance(eng, engines.Local) and eng.slots > 1:
            early = _EarlyParts(work, width, task_budget, eng)
            for _ in range(eng.slots):  # (the workers start and import while the first parts are spooled)
                eng.submit(outofcore.ready)
        writers = [_SpoolWriter(work, s, width, options["metadata"], options["unigram"], early) for s in range(shards)]
        try:
            feed(writers)
            _refuse_empty([wr.docs for wr in writers])
        except BaseException:
            eng.close(interrupted=True)  # (parts may be sorting already)
            raise
        finally:
            for wr in writers:
                wr.close()
        files = {p.name: [p.stat().st_size, outofcore.crc32(p)] for wr in writers for p in wr.paths.values()}
        with atomic_output(manifest, fsync=False) as f:
            f.write(json.dumps({"options": options, "files": files}).encode())
        del writers
        outofcore.trim()  # (the spool's buffers: the sorts that may run in this process come next)
    _tables(work, shards, width, task_budget, eng, report, early.parts if early is not None else {})
    for s in range(shards):
        for kind in KINDS:
            if (src := _work_file(work, kind, s)).exists():
                dst = _final_path(out, kind, s, options["version"], shards)
                dst.parent.mkdir(exist_ok=True)
                os.replace(src, dst)
    shutil.rmtree(work)
    return out


def _spooled(manifest: Path, options: dict[str, Any]) -> bool:
    """Whether the documents were spooled with these options, every file still as recorded."""
    from .outofcore import crc32

    try:
        meta = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return False
    if meta.get("options") != options:
        return False
    for name, (size, crc) in meta["files"].items():
        p = manifest.with_name(name)
        if not p.exists() or p.stat().st_size != size or crc32(p) != crc:
            return False
    return True


def _tables(work: Path, shards: int, width: int, budget: int | None, eng: Any, report: Any,
            early: dict[tuple[int, int], tuple[Any, int, int, int]]) -> None:
    """Every shard's table: its parts sorted (or taken from ``early``, :class:`_EarlyParts`), then merged, as tasks
    of ``eng`` (in parallel when it has workers); each shard's merge starts as soon as its own parts are done.
    SIGTERM stops the workers and leaves what is finished for the next run."""
    import signal
    import threading
    import time

    from . import outofcore

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, stop) if main else None
    pending: dict[Any, tuple[str, int, int]] = {}
    plans: dict[int, tuple[list[tuple[int, int]], list[str], int]] = {}
    started = time.perf_counter()
    interrupted = True
    try:
        for s in range(shards):
            corpus = _work_file(work, "tokenized", s)
            n = corpus.stat().st_size
            k = schema.pointer_width(n)
            ranges = outofcore.plan(n, width, budget)
            parts = [str(work / f"part.{s}.{i}") for i in range(len(ranges))]
            plans[s] = (ranges, parts, len(ranges))
            report(f"shard {s}: {n // width} tokens, {len(ranges)} part(s) of up to {ranges[0][1] // width} "
                   f"tokens, scratch {(k + outofcore.AUX_SIZE) * (n // width)} bytes")
            if outofcore.finished(_work_file(work, "table", s), n=n, k=k) is not None:
                report(f"shard {s}: table reused")
                plans[s] = (ranges, parts, 0)
                continue
            for i, (a, b) in enumerate(ranges):
                got = early.pop((s, i), None)
                if got is not None and got[1:] == (k, a, b):
                    pending[got[0]] = ("part", s, i)
                    continue
                if got is not None:  # (a width that changed: its pointers rewritten once the early sort is over)
                    got[0].exception()
                    report(f"shard {s}: part {i + 1}/{len(ranges)} sorted early with width {got[1]}, not {k}")
                fut = eng.submit(outofcore.sort_part, str(corpus), width, k, a, b, parts[i])
                pending[fut] = ("part", s, i)
        while pending:
            done, _ = eng.wait_any(set(pending))
            for fut in done:
                step, s, i = pending.pop(fut)
                result = fut.result()
                ranges, parts, left = plans[s]
                corpus = str(_work_file(work, "tokenized", s))
                k = schema.pointer_width(os.path.getsize(corpus))
                table = str(_work_file(work, "table", s))
                took = f"[{time.perf_counter() - started:.1f} s]"
                if step == "part" and result.get("deferred"):  # (its window left ties: sorted again now)
                    report(f"shard {s}: part {i + 1}/{len(ranges)} sorted again (ties past its window)")
                    a, b = ranges[i]
                    pending[eng.submit(outofcore.sort_part, corpus, width, k, a, b, parts[i])] = ("part", s, i)
                    continue
                if step == "part":
                    how = ("reused" if result.get("reused") else "sorted early" if result.get("early") else
                           f"rewritten to width {k}" if result.get("rewidth") else "sorted")
                    report(f"shard {s}: part {i + 1}/{len(ranges)} {how} {took}")
                    plans[s] = (ranges, parts, left - 1)
                    if left > 1:
                        continue
                    if len(ranges) == 1:
                        pending[eng.submit(outofcore.finish_shard, corpus, parts, ranges, width, k, budget or 0,
                                           table)] = ("table", s, 0)
                    else:  # split into ranges that the workers merge at once (8 per worker: equal counts are
                        # not equal work, ties of frequent n-grams cluster in some ranges; the last 4 smaller and
                        # smaller, as the last range runs alone)
                        pieces = 1 if eng.slots == 1 else 8 * eng.slots
                        pending[eng.submit(outofcore.prepare_merge, corpus, parts, ranges, width, k, pieces,
                                           table, 0 if pieces == 1 else TAPER)] = ("split", s, 0)
                elif step == "split":
                    plans[s] = (ranges, parts, len(result) - 1)
                    for j in range(len(result) - 1):
                        pending[eng.submit(outofcore.merge_piece, corpus, parts, k, budget or 0,
                                           table + ".merging", j, result, None, True)] = ("piece", s, j)
                elif step == "piece":
                    plans[s] = (ranges, parts, left - 1)
                    report(f"shard {s}: merge range {i + 1} {'reused' if result.get('reused') else 'done'} {took}")
                    if left == 1:
                        pending[eng.submit(outofcore.seal_table, corpus, parts, k, table)] = ("table", s, 0)
                else:
                    report(f"shard {s}: table {'reused' if result.get('reused') else 'done'} {took}")
        interrupted = False
    finally:
        eng.close(interrupted=interrupted)
        if main:
            signal.signal(signal.SIGTERM, previous)




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
                progress_bar: bool = False, max_memory: int | str | None = None, workers: int = 1,
                engine: str = "local", scheduler: Any = None) -> Path:
    """Index ``data_dir/**/*.json*`` as the real indexer does: files in sorted order, the ``text`` field
    tokenized (``tokenize(text)`` -> token ids; UTF-8 bytes for u8 when ``tokenize`` is None), every
    other field kept as metadata, and documents dealt to shards round-robin within each file and batch.
    Lines are streamed: memory is the tokenized corpus, the metadata and the suffix array; with
    ``max_memory``, ``workers`` or ``engine`` as for :func:`build` (out of core, resumable: the input
    files' names, sizes and times are part of what a resumed build must match)."""
    _check_build(token_width, version, shards)
    rev = version in schema.INFINIGRAM_REVERSED if reverse is None else reverse
    root = Path(data_dir)
    files = sorted(str(p) for p in root.glob("**/*.json*") if p.is_file())

    def feed(writers: list[Any]) -> None:
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

    if max_memory is not None or workers != 1 or engine != "local":
        stats = [[p[len(str(root)) + 1 :], os.stat(p).st_size, os.stat(p).st_mtime_ns] for p in files]
        options = {"token_width": token_width, "version": version, "shards": shards, "reverse": rev,
                   "metadata": metadata, "unigram": unigram, "batch_size": batch_size, "inputs": stats}
        return _build_out_of_core(feed, Path(out_dir), options, max_memory=max_memory, workers=workers,
                                  engine=engine, scheduler=scheduler, show=progress_bar)
    writers = [_ShardWriter(token_width, metadata, unigram) for _ in range(shards)]
    feed(writers)
    return _write_shards(writers, Path(out_dir), version, progress_bar)
