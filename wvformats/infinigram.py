"""infini-gram indexes: build them (byte-identical to the real indexer) and query them on memory maps."""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import pointers
from .errors import FormatError, TruncatedError, ValueMismatchError
from .fileio import atomic_output

KINDS = ("tokenized", "table", "offset", "metadata", "metaoff", "unigram")
NAME = "infini-gram"


def sep(width: int) -> int:
    return (1 << (8 * width)) - 1


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


def _shard_files(tokens: np.ndarray, width: int) -> tuple[bytes, bytes]:
    ds = tokens.astype(f"<u{width}" if width > 1 else "u1").tobytes()
    # the engine compares raw little-endian bytes: order tokens by their big-endian value
    keys = tokens.astype(np.uint64)
    if width > 1:
        keys = tokens.astype(f"<u{width}").byteswap().astype(np.uint64)
    order = suffix_array(keys)
    k = pointers.width_for(len(ds))
    table = pointers.encode(order.astype(np.uint64) * width, k).tobytes() if k else b""
    return ds, table


def build(docs: Iterable[Sequence[int]], out_dir: str | os.PathLike[str], *, token_width: int = 2,
          version: int = 4, shards: int = 1, metadata: Iterable[dict[str, Any]] | None = None,
          unigram: bool = True) -> Path:
    """Write an index of ``docs`` (token-id sequences) as the real indexer would (v4/v5, suffixed files).

    Documents go to shards round-robin (doc i to shard i % shards), as the indexer does within one
    input file and batch. ``metadata``: one dict per document, written as the indexer's JSON lines
    (``{"path": ..., "linenum": ..., "metadata": {...}}`` is the caller's to shape).
    """
    if token_width not in (1, 2, 4) or version not in (4, 5) or shards < 1:
        raise ValueError("token_width 1, 2 or 4; version 4 or 5; shards >= 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    s_tok = sep(token_width)
    docs = [np.asarray(d, np.int64) for d in docs]
    metas = list(metadata) if metadata is not None else None
    for d in docs:
        if d.size and (d.min() < 0 or d.max() >= s_tok):
            raise ValueError(f"token ids must be in 0..{s_tok - 1}")
    for s in range(shards):
        mine = list(range(s, len(docs), shards))
        parts, offsets, pos = [], [], 0
        for i in mine:
            d = docs[i][::-1] if version == 5 else docs[i]
            offsets.append(pos * token_width)
            parts.append(np.concatenate([[s_tok], d]))
            pos += 1 + len(d)
        tokens = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        ds, table = _shard_files(tokens, token_width)
        files = {"tokenized": ds, "table": table, "offset": np.array(offsets, "<u8").tobytes()}
        if metas is not None:
            lines = [json.dumps(metas[i]) + "\n" for i in mine]
            files["metadata"] = "".join(lines).encode("utf-8")
            files["metaoff"] = np.cumsum([0] + [len(x.encode("utf-8")) for x in lines[:-1]]).astype("<u8").tobytes() \
                if lines else b""
        if unigram:
            ids, counts = np.unique(tokens, return_counts=True)
            files["unigram"] = "".join(f"{a} {b}\n" for a, b in zip(ids.tolist(), counts.tolist(),
                                                                         strict=True)).encode("ascii")
        for kind, data in files.items():
            with atomic_output(out / f"{kind}.{s}") as f:
                f.write(data)
    return out


class Shard:
    """One shard's files, memory-mapped."""

    def __init__(self, files: dict[str, Path], width: int) -> None:
        self.width = width
        self.maps = {kind: _map(p) for kind, p in files.items()}
        ds, table, offset = (self.maps.get(k) for k in ("tokenized", "table", "offset"))
        if ds is None or table is None or offset is None:
            raise FormatError("a shard needs tokenized, table and offset files", format=NAME)
        if len(ds) % width:
            raise FormatError(f"tokenized size {len(ds)} is not a multiple of the token width {width}",
                              format=NAME, path=str(files["tokenized"]))
        self.tok_cnt = len(ds) // width
        if len(offset) % 8:
            raise TruncatedError("offset size is not a multiple of 8", format=NAME, path=str(files["offset"]))
        self.doc_cnt = len(offset) // 8
        if self.tok_cnt and len(table) % self.tok_cnt:
            raise ValueMismatchError(f"table size {len(table)} is not a whole number of pointers for "
                                     f"{self.tok_cnt} tokens", format=NAME, path=str(files["table"]))
        self.k = len(table) // self.tok_cnt if self.tok_cnt else 0
        # the indexer's k = ceil(log2(size) / 8) is 0 for a 1-byte shard: its one pointer is implied 0
        if self.tok_cnt and not 1 <= self.k <= 8 and not (self.k == 0 and len(ds) == 1):
            raise ValueMismatchError(f"implausible pointer width {self.k}", format=NAME, path=str(files["table"]))
        self.ds, self.table = ds, table
        self.offsets = np.frombuffer(offset, "<u8") if len(offset) else np.zeros(0, "<u8")

    def ptr(self, rank: int) -> int:
        return pointers.at(self.table, self.k, rank) if self.k else 0

    def find(self, query: bytes) -> tuple[int, int]:
        """Half-open rank range of suffixes that start with ``query`` (raw bytes comparison)."""
        n = len(query)
        if n == 0:
            return 0, self.tok_cnt
        ds = self.ds

        def key(r: int) -> bytes:
            p = self.ptr(r)
            return ds[p : p + n]

        lo, hi = 0, self.tok_cnt
        while lo < hi:
            mid = (lo + hi) // 2
            if key(mid) < query:
                lo = mid + 1
            else:
                hi = mid
        start, hi = lo, self.tok_cnt
        while lo < hi:
            mid = (lo + hi) // 2
            if key(mid) <= query:
                lo = mid + 1
            else:
                hi = mid
        return start, lo


def _map(path: Path) -> Any:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""


class InfiniGramIndex:
    """An index over one or many shards (v4/v5 suffixed files); queries as the engine answers them."""

    def __init__(self, directory: str | os.PathLike[str], *, token_width: int | None = None,
                 version: int = 4) -> None:
        self.directory = Path(directory)
        self.version = version
        groups = _groups(self.directory)
        if not groups:
            raise FormatError(f"{self.directory} holds no infini-gram files", format=NAME)
        self.token_width = token_width or _infer_width(groups)
        self.shards = [Shard(files, self.token_width) for _, files in sorted(groups.items())]

    def _bytes(self, tokens: Sequence[int]) -> bytes:
        w = self.token_width
        toks = list(tokens)[::-1] if self.version == 5 else list(tokens)
        return np.asarray(toks, f"<u{w}" if w > 1 else "u1").tobytes()

    def find(self, tokens: Sequence[int]) -> dict[str, Any]:
        q = self._bytes(tokens)
        segments = [s.find(q) for s in self.shards]
        return {"cnt": sum(b - a for a, b in segments), "segment_by_shard": segments}

    def count(self, tokens: Sequence[int]) -> int:
        """Token-aligned occurrences of ``tokens`` in all shards (``[]`` counts every token, SEPs included)."""
        return self.find(tokens)["cnt"]

    def prob(self, prompt: Sequence[int], cont: int) -> dict[str, Any]:
        prompt_cnt = self.count(prompt)
        if prompt_cnt == 0:
            return {"prompt_cnt": 0, "cont_cnt": 0, "prob": -1.0}
        cont_cnt = self.count([*prompt, cont])
        return {"prompt_cnt": prompt_cnt, "cont_cnt": cont_cnt, "prob": cont_cnt / prompt_cnt}

    def ntd(self, prompt: Sequence[int], eos_token_id: int = 0) -> dict[str, Any]:
        """Exact next-token distribution after ``prompt`` over all shards.

        The next token is the one after the match (v4) or before it in the stored reversed document (v5);
        a separator or the end of a shard counts as ``eos_token_id``, as in the engine. Every occurrence is
        counted (the engine's sampling above ``max_support`` and its end-of-shard bug do not apply).
        """
        w = self.token_width
        n = len(prompt)
        counts: dict[int, int] = {}
        total = 0
        q = self._bytes(prompt)
        for shard in self.shards:
            lo, hi = shard.find(q)
            if hi <= lo:
                continue
            total += hi - lo
            if shard.k:
                ptrs = pointers.decode(shard.table[lo * shard.k : hi * shard.k], shard.k).astype(np.int64)
            else:
                ptrs = np.zeros(hi - lo, np.int64)
            toks = np.frombuffer(shard.ds, f"<u{w}" if w > 1 else "u1")
            at = ptrs // w + n if self.version == 4 else ptrs // w - 1
            inside = (at >= 0) & (at < shard.tok_cnt)
            nxt = np.full(len(at), eos_token_id, np.int64)
            nxt[inside] = toks[at[inside]]
            nxt[nxt == sep(w)] = eos_token_id
            for tok, c in zip(*np.unique(nxt, return_counts=True), strict=True):
                counts[int(tok)] = counts.get(int(tok), 0) + int(c)
        return {"prompt_cnt": total, "approx": False,
                "result_by_token_id": {t: {"cont_cnt": c, "prob": c / total} for t, c in sorted(counts.items())}}

    def _longest_suffix(self, prompt: list[int]) -> int:
        best = 0
        for n in range(1, len(prompt) + 1):  # counts only shrink as the suffix grows: stop at the first miss
            if self.count(prompt[len(prompt) - n :]) == 0:
                break
            best = n
        return best

    def infgram_prob(self, prompt: Sequence[int], cont: int) -> dict[str, Any]:
        """prob() on the longest suffix of ``prompt`` that occurs (``suffix_len`` 0: unconditional)."""
        prompt = list(prompt)
        best = self._longest_suffix(prompt)
        out = self.prob(prompt[len(prompt) - best :] if best else [], cont)
        out["suffix_len"] = best
        return out

    def infgram_ntd(self, prompt: Sequence[int], eos_token_id: int = 0) -> dict[str, Any]:
        """ntd() on the longest suffix of ``prompt`` that occurs."""
        prompt = list(prompt)
        best = self._longest_suffix(prompt)
        out = self.ntd(prompt[len(prompt) - best :] if best else [], eos_token_id)
        out["suffix_len"] = best
        return out

    def get_doc_by_rank(self, shard: int, rank: int) -> dict[str, Any]:
        """The document holding suffix ``rank`` of shard ``shard``, and where the match starts in it."""
        sh = self.shards[shard]
        if not 0 <= rank < sh.tok_cnt:
            raise IndexError("rank is out of range")
        ptr = sh.ptr(rank)
        local = int(np.searchsorted(sh.offsets, ptr, side="right")) - 1
        doc = self.get_doc_by_ix(sum(s.doc_cnt for s in self.shards[:shard]) + local)
        doc["needle_offset"] = (ptr - int(sh.offsets[local])) // self.token_width - 1
        return doc

    def get_doc_by_ix(self, doc_ix: int) -> dict[str, Any]:
        """Document ``doc_ix`` (global, shards in order): its tokens (in reading order) and metadata line."""
        for shard in self.shards:
            if doc_ix < shard.doc_cnt:
                w = self.token_width
                start = int(shard.offsets[doc_ix]) + w
                end = int(shard.offsets[doc_ix + 1]) if doc_ix + 1 < shard.doc_cnt else len(shard.ds)
                raw = shard.ds[start:end]
                toks = np.frombuffer(raw, f"<u{w}" if w > 1 else "u1").tolist()
                meta = ""
                mt, mo = shard.maps.get("metadata"), shard.maps.get("metaoff")
                if mt is not None and mo is not None and len(mo) >= 8 * (doc_ix + 1):
                    offs = np.frombuffer(mo, "<u8")
                    a = int(offs[doc_ix])
                    b = int(offs[doc_ix + 1]) if doc_ix + 1 < len(offs) else len(mt)
                    meta = bytes(mt[a:b]).decode("utf-8")
                return {"doc_ix": doc_ix, "doc_len": len(toks),
                        "token_ids": toks[::-1] if self.version == 5 else toks, "metadata": meta}
            doc_ix -= shard.doc_cnt
        raise IndexError("doc_ix is past the last document")

    @property
    def tok_cnt(self) -> int:
        return sum(s.tok_cnt for s in self.shards)

    @property
    def doc_cnt(self) -> int:
        return sum(s.doc_cnt for s in self.shards)


def _groups(directory: Path) -> dict[str, dict[str, Path]]:
    """Shard name -> its files: v4/v5 suffixed files (``table.0``), or v6 shard directories (``table``)."""
    groups: dict[str, dict[str, Path]] = {}
    for p in sorted(directory.iterdir(), key=lambda p: p.name):
        kind, _, suffix = p.name.partition(".")
        if p.is_file() and kind in KINDS:
            groups.setdefault(suffix, {})[kind] = p
    if not groups:  # v6: one directory per shard, files without suffix
        for sub in sorted((p for p in directory.iterdir() if p.is_dir()), key=lambda p: p.name):
            files = {p.name: p for p in sub.iterdir() if p.is_file() and p.name in KINDS}
            if "tokenized" in files:
                groups[sub.name] = files
    return groups


def _infer_width(groups: dict[str, dict[str, Path]]) -> int:
    """The token width that makes every shard's sizes consistent (table = k * tok_cnt, SEP at offsets)."""
    candidates = []
    for w in (1, 2, 4):
        ok = True
        for files in groups.values():
            size = files["tokenized"].stat().st_size if "tokenized" in files else 0
            tsize = files["table"].stat().st_size if "table" in files else 0
            if size % w or (size and tsize % (size // w)) or (size and not 1 <= tsize // (size // w) <= 8):
                ok = False
                break
            with open(files["tokenized"], "rb") as f:
                if size and f.read(w) != b"\xff" * w:
                    ok = False
                    break
        if ok:
            candidates.append(w)
    if len(candidates) != 1:
        raise FormatError(f"cannot infer the token width (candidates {candidates}); pass token_width=",
                          format=NAME)
    return candidates[0]


def check(index: InfiniGramIndex, sample: int = 2000) -> list[str]:
    """Consistency problems: offsets that do not point at SEPs, pointers out of range or misaligned,
    and suffix order (checked on ``sample`` random neighbouring pairs; every pair when sample <= 0)."""
    problems = []
    w = index.token_width
    sep_bytes = b"\xff" * w
    rng = np.random.default_rng(0)
    for s_ix, shard in enumerate(index.shards):
        offs = shard.offsets
        if offs.size and (np.any(np.diff(offs.astype(np.int64)) <= 0) or int(offs[0]) != 0):
            problems.append(f"shard {s_ix}: offsets are not increasing from 0")
        bad = [int(o) for o in offs[:100000] if shard.ds[int(o) : int(o) + w] != sep_bytes]
        if bad:
            problems.append(f"shard {s_ix}: {len(bad)} offsets do not point at a separator (first {bad[0]})")
        n = shard.tok_cnt
        if n < 2 or not shard.k:
            continue
        ranks = range(n - 1) if sample <= 0 or n - 1 <= sample else rng.integers(0, n - 1, sample).tolist()
        for r in ranks:
            a, b = shard.ptr(r), shard.ptr(r + 1)
            if a % w or b % w or a >= len(shard.ds) or b >= len(shard.ds):
                problems.append(f"shard {s_ix}: pointer at rank {r} is out of range or misaligned")
                break
            if shard.ds[a:] >= shard.ds[b:]:
                problems.append(f"shard {s_ix}: suffixes at ranks {r} and {r + 1} are out of order")
                break
    return problems


def build_jsonl(data_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, tokenize: Any = None,
                token_width: int = 1, version: int = 4, shards: int = 1, metadata: bool = True,
                unigram: bool = True, batch_size: int = 65536) -> Path:
    """Index ``data_dir/**/*.jsonl`` as the real indexer does: files in sorted order, the ``text`` field
    tokenized (UTF-8 bytes for u8 when ``tokenize`` is None), every other field kept as metadata, and
    documents dealt to shards round-robin within each file and batch."""
    root = Path(data_dir)
    files = sorted(str(p) for p in root.glob("**/*.json*") if p.is_file())
    per_shard: list[list[list[int]]] = [[] for _ in range(shards)]
    metas: list[list[dict[str, Any]]] = [[] for _ in range(shards)]
    for path in files:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
        for start in range(0, len(lines), batch_size):
            for j, line in enumerate(lines[start : start + batch_size]):
                obj = json.loads(line)
                text = obj.pop("text")
                tokens = list(text.encode("utf-8")) if tokenize is None else list(tokenize(text))
                s = j % shards
                per_shard[s].append(tokens)
                metas[s].append({"path": path[len(str(root)) + 1 :], "linenum": start + j, "metadata": obj})
    out = Path(out_dir)
    for s in range(shards):
        tmp = out / f".shard{s}"
        build(per_shard[s], tmp, token_width=token_width, version=version, shards=1,
              metadata=metas[s] if metadata else None, unigram=unigram)
        for p in tmp.iterdir():
            os.replace(p, out / f"{p.name.rpartition('.')[0]}.{s}")
        tmp.rmdir()
    return out
