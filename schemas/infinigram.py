"""infini-gram index files. No file has a header: every count comes from file sizes.

One shard (v4/v5: files suffixed ``.{s}`` in one directory; v6: a directory per shard, no suffix):

| file | content |
|---|---|
| tokenized | for each document: SEP (all-ones token) then its tokens; W = 1, 2 or 4 bytes each, little-endian |
| table | suffix array: one k-byte little-endian byte offset per token, ordered by the raw bytes of the suffixes |
| offset | u64 per document: byte offset of its SEP in tokenized |
| metadata | optional: one JSON line per document |
| metaoff | optional: u64 per document: byte offset of its metadata line |
| unigram | optional: text lines "{token_id} {count}\\n" in ascending id, SEP included |

v5 stores each document's tokens reversed (SEP still first). ``tok_cnt = size(tokenized) / W``,
``doc_cnt = size(offset) / 8``, ``k = size(table) / tok_cnt``.
"""

import math

import numpy as np
from construct import Struct, this
from wvformats.schemas.identity import (  # noqa: F401 - the file set, named here with the files' schemas
    INFINIGRAM_KINDS,
    INFINIGRAM_REQUIRED,
    INFINIGRAM_REVERSED,
    INFINIGRAM_TOKEN_WIDTHS,
    INFINIGRAM_VERSIONS,
    infinigram_name,
)

from wvformats.framework import NumpyArray

OFFSET_WIDTH = 8  # bytes of each u64 in offset and metaoff


def pointer_width(tokenized_bytes: int) -> int:
    """``k``, the bytes of each suffix-array pointer: the fewest whole bytes that hold the largest byte offset
    of the tokenized file, as the indexer computes it (ceil(log2(size) / 8); 0 for an empty file)."""
    return math.ceil(math.log2(tokenized_bytes) / 8) if tokenized_bytes > 0 else 0


def pointer(raw: bytes | memoryview) -> int:
    """A suffix-array pointer from its k bytes (little-endian, unsigned: a byte offset into tokenized)."""
    return int.from_bytes(raw, "little")


def offset_entry(value: int) -> bytes:
    """An entry of offset or metaoff: the byte offset as a little-endian u64."""
    return value.to_bytes(OFFSET_WIDTH, "little")


# The out-of-core build's scratch file of a part (no file of the index): for each suffix of the part, in the
# part's order, its LCP with the suffix before it in the part and the bytes of the suffix that follow that LCP
# (its first bytes for the part's first suffix), zero past the part's window
PART_TAIL = 12  # bytes of the suffix after its LCP, kept in its record
LCP_UNKNOWN = 0xFFFF  # an LCP not found in the window (or that large): the merge reads the corpus
part_record = np.dtype([("lcp", "<u2"), ("tail", f"V{PART_TAIL}")])  # u16 little-endian LCP, then the tail


def part_records(lcps: list[int], tails: list[bytes]) -> bytes:
    """The records of a part from each suffix's LCP (LCP_UNKNOWN: not known) and tail (at most PART_TAIL
    bytes, zero-filled)."""
    out = np.zeros(len(lcps), part_record)
    out["lcp"] = lcps
    out["tail"] = [t.ljust(PART_TAIL, b"\0") for t in tails]
    return out.tobytes()


def counts(tokenized: int, table: int, offset: int, width: int) -> tuple[int, int, int]:
    """(tok_cnt, doc_cnt, k) of a shard from its files' sizes in bytes; a size that is not a whole number
    of its units raises ValueError naming the file."""
    if tokenized % width:
        raise ValueError(f"tokenized: {tokenized} bytes are not a whole number of {width}-byte tokens")
    if offset % OFFSET_WIDTH:
        raise ValueError(f"offset: {offset} bytes are not a whole number of u64")
    tok_cnt = tokenized // width
    if tok_cnt and table % tok_cnt:
        raise ValueError(f"table: {table} bytes are not a whole number of pointers for {tok_cnt} tokens")
    return tok_cnt, offset // OFFSET_WIDTH, table // tok_cnt if tok_cnt else 0

tokenized = {w: Struct("tokens" / NumpyArray(f"<u{w}" if w > 1 else "u1", this._.tok_cnt)
                       * f"{w}-byte little-endian tokens, SEP before each document") for w in INFINIGRAM_TOKEN_WIDTHS}

table = Struct(
    "pointers" / NumpyArray("u1", (this._.tok_cnt, this._.k))
    * "tok_cnt pointers of k bytes each (little-endian byte offsets into tokenized)",
)

offset = Struct("offsets" / NumpyArray("<u8", this._.doc_cnt) * "u64 byte offset of each document's SEP")

metaoff = Struct("offsets" / NumpyArray("<u8", this._.doc_cnt) * "u64 byte offset of each metadata line")
