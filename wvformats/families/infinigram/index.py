"""infini-gram indexes: open them on memory maps (the token width inferred from every constraint the files
give), query them, and check them. Building is :mod:`.build`; its public functions are named here too, so
that ``from wvformats import infinigram`` gives both."""

from __future__ import annotations

import builtins
import mmap
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import FormatError, OptionError, TruncatedError, ValueMismatchError
from ...schemas import infinigram as schema
from . import pointers
from .build import build, build_jsonl, suffix_array
from .pointers import sep
from .sniff import KINDS, NAME, shard_files

__all__ = ["KINDS", "NAME", "InfiniGramIndex", "Shard", "build", "build_jsonl", "check", "open", "sep", "suffix_array"]


class Shard:
    """One shard's files, memory-mapped."""

    def __init__(self, files: dict[str, Path], width: int) -> None:
        self.width = width
        self.files = files
        self.maps = {kind: _map(p) for kind, p in files.items()}
        ds, table, offset = (self.maps.get(k) for k in schema.INFINIGRAM_REQUIRED)
        if ds is None or table is None or offset is None:
            raise FormatError(f"a shard needs {', '.join(schema.INFINIGRAM_REQUIRED)} files", format=NAME)
        try:
            self.tok_cnt, self.doc_cnt, self.k = schema.counts(len(ds), len(table), len(offset), width)
        except ValueError as e:  # (a size that is not a whole number of its units, naming the file)
            kind, _, why = str(e).partition(": ")
            cls = TruncatedError if kind == "offset" else ValueMismatchError
            raise cls(why, format=NAME, path=str(files[kind])) from None
        # the indexer's k = ceil(log2(size) / 8) is 0 for a 1-byte shard: its one pointer is implied 0
        if self.tok_cnt and not 1 <= self.k <= 8 and not (self.k == 0 and len(ds) == 1):
            raise ValueMismatchError(f"implausible pointer width {self.k}", format=NAME, path=str(files["table"]))
        self.ds, self.table = ds, table
        self.offsets = np.frombuffer(offset, "<u8") if len(offset) else np.zeros(0, "<u8")

    def ptr(self, rank: int) -> int:
        return pointers.at(self.table, self.k, rank) if self.k else 0

    def addressable(self) -> bool:
        """Whether k-byte pointers reach every token (the last one starts one token before the end)."""
        return not self.k or len(self.ds) - self.width < 256 ** self.k

    def misfit(self, sample: int = 256) -> str | None:
        """Why these files cannot hold tokens of this width, from what is cheap to read (None if they can):
        pointers that cannot address the corpus, no separator at its start or at sampled document offsets,
        sampled pointers off the token positions, a unigram file whose last (highest) id is not SEP."""
        w, n = self.width, len(self.ds)
        if not n:
            return None
        if not self.addressable():
            return f"{self.k}-byte pointers cannot address {n} bytes"
        if not (_gather(self.files["tokenized"], np.zeros(1, np.int64), w) == 0xFF).all():
            return "the tokenized file does not start with a separator"
        # (the samples are read by pread, not through the maps: a page faulted in at each sample would stay
        # in the resident set, and Linux 6.x maps a whole large folio of the page cache at each fault)
        if self.doc_cnt:
            at = np.unique(np.linspace(0, self.doc_cnt - 1, min(self.doc_cnt, sample)).astype(np.int64))
            offs = _gather(self.files["offset"], at * schema.OFFSET_WIDTH, schema.OFFSET_WIDTH).view("<u8")[:, 0]
            bad = (offs % w != 0) | (offs > n - w)
            if not bad.any():
                bad = ~(_gather(self.files["tokenized"], offs.astype(np.int64), w) == 0xFF).all(axis=1)
            if bad.any():
                i = int(at[np.argmax(bad)])
                return f"document offset {i} ({int(offs[np.argmax(bad)])}) is not at a separator"
        if self.k:
            ranks = np.unique(np.linspace(0, self.tok_cnt - 1, min(self.tok_cnt, sample)).astype(np.int64))
            ptrs = pointers.decode(_gather(self.files["table"], ranks * self.k, self.k), self.k)
            bad = (ptrs % w != 0) | (ptrs >= n)
            if bad.any():
                return f"the pointer at rank {int(ranks[np.argmax(bad)])} is not a token position"
        unigram = self.maps.get("unigram")
        if unigram is not None and len(unigram):  # "{id} {count}" lines in ascending id: SEP's comes last
            last = bytes(unigram[-64:]).rstrip(b"\n").rpartition(b"\n")[2].split()
            if len(last) == 2 and last[0].isdigit() and int(last[0]) != sep(w):
                return f"the unigram file's last id is {int(last[0])}, not the separator {sep(w)}"
        return None

    def ordered_sample(self, sample: int = 256) -> bool:
        """Whether ``sample`` evenly spread neighbouring suffix pairs are in the engine's order."""
        if self.tok_cnt < 2 or not self.k:
            return True
        ranks = np.unique(np.linspace(0, self.tok_cnt - 2, min(self.tok_cnt - 1, sample)).astype(np.int64))
        return _order_problem(self, ranks) is None

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


def _gather(path: Path, at: np.ndarray, size: int) -> np.ndarray:
    """The ``size`` bytes at each offset ``at`` of ``path`` (all inside it), read by pread: ``(len(at), size)``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        raw = b"".join([os.pread(fd, size, int(a)) for a in at.tolist()])
    finally:
        os.close(fd)
    return np.frombuffer(raw, np.uint8).reshape(len(at), size)


def _map(path: Path) -> Any:
    with builtins.open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""


class InfiniGramIndex:
    """An index over one or many shards (v4/v5 suffixed files, v6 files or shard folders); queries as the
    engine answers them. The token width is inferred when only one fits the files (see ``_infer_width``);
    the version cannot be told from them (v5 differs only in storing documents reversed): pass
    ``version=5`` for a v5 index or a v6 folder built with ``--reversed``; 4 and 6 read forward."""

    def __init__(self, directory: str | os.PathLike[str], *, token_width: int | None = None,
                 version: int = 4) -> None:
        self.directory = Path(directory)
        if version not in schema.INFINIGRAM_VERSIONS or token_width not in (None, *schema.INFINIGRAM_TOKEN_WIDTHS):
            raise OptionError("version 4, 5 (documents reversed) or 6; token_width 1, 2 or 4")
        self.version = version
        # v5 stores each document reversed; v4 and v6 (the v4 files without suffix) store it forward
        self.reversed = version in schema.INFINIGRAM_REVERSED
        groups = shard_files(self.directory)
        if not groups:
            raise FormatError(f"{self.directory} holds no infini-gram files", format=NAME)
        self.token_width = token_width or _infer_width(groups)
        # shard order is the string order of the names (table.10 before table.2), as the engine sorts its
        # file paths: it numbers the shards and the global doc_ix
        self.shards = [Shard(groups[name], self.token_width) for name in sorted(groups)]

    def __repr__(self) -> str:
        tokens = sum(s.tok_cnt for s in self.shards)
        return (f"<InfiniGramIndex v{self.version} {str(self.directory)!r}: {len(self.shards)} shard(s), "
                f"{tokens} tokens of {self.token_width} byte(s)>")

    def _bytes(self, tokens: Sequence[int]) -> bytes:
        w = self.token_width
        toks = list(tokens)[::-1] if self.reversed else list(tokens)
        bad = [t for t in toks if isinstance(t, bool) or not isinstance(t, (int, np.integer))
               or not 0 <= t < 1 << (8 * w)]
        if bad:  # numpy would raise OverflowError (or wrap a negative id round to another token)
            raise ValueError(f"token id {bad[0]!r} does not fit this index's {w}-byte tokens "
                             f"(0 to {(1 << (8 * w)) - 1})")
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

        The next token is the one after the match (v4, v6) or before it in the stored reversed document (v5);
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
            at = ptrs // w - 1 if self.reversed else ptrs // w + n
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
        if not 0 <= ptr < len(sh.ds):
            raise FormatError(f"suffix pointer {ptr} is past the {len(sh.ds)}-byte corpus", format=NAME,
                              path=f"table[{rank}]", offset=rank * sh.k)
        local = int(np.searchsorted(sh.offsets, ptr, side="right")) - 1
        if local < 0:
            raise FormatError(f"no document holds suffix pointer {ptr}", format=NAME, path="offset")
        doc = self.get_doc_by_ix(sum(s.doc_cnt for s in self.shards[:shard]) + local)
        doc["needle_offset"] = (ptr - int(sh.offsets[local])) // self.token_width - 1
        return doc

    def get_doc_by_ix(self, doc_ix: int) -> dict[str, Any]:
        """Document ``doc_ix`` (global, shards in order): its tokens (in reading order) and metadata line."""
        if doc_ix < 0:
            raise IndexError("doc_ix is out of range")
        local = doc_ix  # the index within the shard
        for s, shard in enumerate(self.shards):
            if local < shard.doc_cnt:
                w = self.token_width
                start = int(shard.offsets[local]) + w
                end = int(shard.offsets[local + 1]) if local + 1 < shard.doc_cnt else len(shard.ds)
                if not w <= start <= end <= len(shard.ds) or (end - start) % w:
                    raise FormatError(f"document spans bytes {start - w}..{end} of a {len(shard.ds)}-byte "
                                      f"corpus in {w}-byte tokens", format=NAME, path=f"shards[{s}].offset[{local}]",
                                      offset=8 * local)
                toks = np.frombuffer(shard.ds[start:end], f"<u{w}" if w > 1 else "u1").tolist()
                meta = ""
                mt, mo = shard.maps.get("metadata"), shard.maps.get("metaoff")
                if mt is not None and mo is not None and len(mo) >= 8 * (local + 1):
                    offs = np.frombuffer(mo, "<u8", len(mo) // 8)
                    a = int(offs[local])
                    b = int(offs[local + 1]) if local + 1 < len(offs) else len(mt)
                    if not a <= b <= len(mt):
                        raise FormatError(f"metadata line spans bytes {a}..{b} of {len(mt)}", format=NAME,
                                          path=f"shards[{s}].metaoff[{local}]", offset=8 * local)
                    try:
                        meta = bytes(mt[a:b]).decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise FormatError("metadata line is not UTF-8", format=NAME, path=f"shards[{s}].metadata[{local}]",
                                          offset=a + e.start) from None
                return {"doc_ix": doc_ix, "doc_len": len(toks),
                        "token_ids": toks[::-1] if self.reversed else toks, "metadata": meta}
            local -= shard.doc_cnt
        raise IndexError("doc_ix is past the last document")

    @property
    def tok_cnt(self) -> int:
        return sum(s.tok_cnt for s in self.shards)

    @property
    def doc_cnt(self) -> int:
        return sum(s.doc_cnt for s in self.shards)


def open(directory: str | os.PathLike[str], *, token_width: int | None = None,  # noqa: A001
         version: int = 4) -> InfiniGramIndex:
    """Open an index folder (every file memory-mapped); see :class:`InfiniGramIndex`."""
    return InfiniGramIndex(directory, token_width=token_width, version=version)


def _infer_width(groups: dict[str, dict[str, Path]]) -> int:
    """The token width the files allow. No file records it: each of 1, 2 and 4 is tried against the sizes
    (``Shard``) and the constraints cheap to read (``Shard.misfit``); if more than one remains, the suffix
    order on sampled ranks decides, and only when it cannot is the width asked for."""
    fits, why = [], {}
    for w in schema.INFINIGRAM_TOKEN_WIDTHS:
        try:
            shards = {name: Shard(files, w) for name, files in sorted(groups.items())}
            why[w] = next((f"shard {name!r}: {m}" for name, s in shards.items() if (m := s.misfit())), "")
        except FormatError as e:
            why[w] = e.message
        if not why[w]:
            fits.append((w, shards.values()))
    if len(fits) > 1:
        fits = [(w, shards) for w, shards in fits if all(s.ordered_sample() for s in shards)] or fits
    if len(fits) == 1:
        return fits[0][0]
    if fits:
        detail = f"widths {', '.join(str(w) for w, _ in fits)} all fit the files"
    else:
        detail = "; ".join(f"width {w}: {why[w]}" for w in why)
    raise FormatError(f"cannot infer the token width ({detail}); pass token_width= (--token-width on the "
                      "command line)", format=NAME)


def _suffix_cmp(ds: Any, a: int, b: int, skip: int = 0) -> int:
    """-1, 0 or 1 as the suffix at byte ``a`` sorts before, equal to or after the one at ``b`` (a suffix
    that is a prefix of the other first), reading growing windows instead of copying whole suffixes."""
    off, step = skip, 64
    while True:
        x, y = ds[a + off : a + off + step], ds[b + off : b + off + step]
        if x != y:
            return -1 if x < y else 1
        if len(x) < step:
            return 0
        off, step = off + step, step * 2


def _order_problem(shard: Shard, ranks: np.ndarray, progress: Callable[[int], Any] | None = None) -> str | None:
    """The first neighbouring pair (rank r, r + 1) out of order, out of range or misaligned, vectorised:
    both suffixes compared 16 bytes at a time as columns (past the end sorts first) for the pairs still
    tied, up to 256 bytes; longer ties by a bounded byte comparison."""
    w, k, n = shard.width, shard.k, len(shard.ds)
    ds = np.frombuffer(shard.ds, np.uint8)
    table = np.frombuffer(shard.table, np.uint8).reshape(-1, k)
    for start in range(0, len(ranks), 1 << 18):
        r = ranks[start : start + (1 << 18)]
        if progress is not None:
            progress(len(r))
        a, b = pointers.decode(table[r], k), pointers.decode(table[r + 1], k)
        bad_a, bad_b = (a % w != 0) | (a >= n), (b % w != 0) | (b >= n)  # unsigned: 2^63 is no index
        if bad_a.any() or bad_b.any():
            i = int(np.argmax(bad_a | bad_b))
            return f"pointer at rank {int(r[i]) + (not bad_a[i])} is out of range or misaligned"
        a, b = a.astype(np.int64), b.astype(np.int64)
        wrong = np.zeros(len(r), bool)
        todo = np.arange(len(r))  # rows whose order is not decided yet
        for skip in range(0, 256, 16):
            pa, pb = a[todo, None] + (skip + np.arange(16)), b[todo, None] + (skip + np.arange(16))
            da = np.where(pa < n, ds[np.minimum(pa, n - 1)].astype(np.int16) + 1, 0)
            db = np.where(pb < n, ds[np.minimum(pb, n - 1)].astype(np.int16) + 1, 0)
            diff = da != db
            decided = diff.any(axis=1)
            first = np.argmax(diff, axis=1)
            rows = np.arange(len(todo))
            wrong[todo] = decided & (da[rows, first] > db[rows, first])
            wrong[todo[~decided & (da[:, -1] == 0)]] = True  # equal up to the end: a duplicate pointer
            todo = todo[~decided & (da[:, -1] != 0)]
            if not todo.size or wrong.any():
                break
        for i in todo.tolist() if not wrong.any() else []:  # 256 equal bytes: read on
            if _suffix_cmp(shard.ds, int(a[i]), int(b[i]), 256) >= 0:
                wrong[i] = True
                break
        if wrong.any():
            i = int(r[np.argmax(wrong)])
            return f"suffixes at ranks {i} and {i + 1} are out of order"
    return None


def check(index: InfiniGramIndex, sample: int = 2000, *, full: bool = False,
          progress: Callable[[int], Any] | None = None) -> list[str]:
    """Consistency problems: offsets that are not increasing or do not point at separators, metaoff and
    metadata that disagree, pointers too narrow, out of range or misaligned, and suffix order (on
    ``sample`` random neighbouring pairs per shard; every pair, vectorised, with ``full=True``).
    ``progress``: called with the number of neighbouring pairs about to be compared, as they are (a bar's
    ``update``; a full check compares ``sum(shard.tok_cnt - 1)`` pairs)."""
    problems = []
    w = index.token_width
    rng = np.random.default_rng(0)
    for s_ix, shard in enumerate(index.shards):
        if not shard.tok_cnt:
            problems.append(f"shard {s_ix}: no tokens (the infini-gram engine cannot load an empty shard)")
            continue
        ds = np.frombuffer(shard.ds, np.uint8) if len(shard.ds) else np.zeros(0, np.uint8)
        if shard.offsets.size and int(shard.offsets.max()) + w > len(ds):  # before the cast (2^63 is negative)
            problems.append(f"shard {s_ix}: offsets are not increasing from 0 within the tokenized file")
            continue
        offs = shard.offsets.astype(np.int64)
        if offs.size and (np.any(np.diff(offs) <= 0) or int(offs[0]) != 0 or int(offs[-1]) + w > len(ds)):
            problems.append(f"shard {s_ix}: offsets are not increasing from 0 within the tokenized file")
        elif offs.size:
            at_sep = np.ones(offs.size, bool)
            for j in range(w):
                at_sep &= ds[offs + j] == 0xFF
            if not at_sep.all():
                problems.append(f"shard {s_ix}: {int((~at_sep).sum())} offsets do not point at a separator "
                                f"(first {int(offs[np.argmax(~at_sep)])})")
        meta, metaoff = shard.maps.get("metadata"), shard.maps.get("metaoff")
        if (meta is None) != (metaoff is None):
            problems.append(f"shard {s_ix}: metadata and metaoff come together")
        elif meta is not None and metaoff is not None:
            mo = np.frombuffer(metaoff, "<u8").astype(np.int64) if len(metaoff) % 8 == 0 and len(metaoff) \
                else np.zeros(0, np.int64)
            if len(metaoff) % 8 or mo.size != shard.doc_cnt:
                problems.append(f"shard {s_ix}: metaoff holds {len(metaoff) / 8:g} entries for "
                                f"{shard.doc_cnt} documents")
            elif mo.size and (int(np.frombuffer(metaoff, "<u8").max()) >= len(meta) or int(mo[0]) != 0
                              or np.any(np.diff(mo) <= 0)):
                problems.append(f"shard {s_ix}: metaoff is not increasing from 0 within the metadata file")
            elif mo.size:
                ends = np.append(mo[1:], len(meta)) - 1
                if not (np.frombuffer(meta, np.uint8)[ends] == 0x0A).all():
                    problems.append(f"shard {s_ix}: a metadata line does not end where the next one starts")
        n = shard.tok_cnt
        if n and not shard.addressable():
            problems.append(f"shard {s_ix}: {shard.k}-byte pointers cannot address {len(ds)} bytes")
            continue
        if n < 2 or not shard.k:
            continue
        if full or n - 1 <= sample:
            ranks = np.arange(n - 1)
        else:
            ranks = np.sort(rng.integers(0, n - 1, sample))
        problem = _order_problem(shard, ranks, progress)
        if problem:
            problems.append(f"shard {s_ix}: {problem}")
    return problems


