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

from construct import Struct, this

from wvformats.framework import NumpyArray

tokenized = {w: Struct("tokens" / NumpyArray(f"<u{w}" if w > 1 else "u1", this._.tok_cnt)
                       * f"{w}-byte little-endian tokens, SEP before each document") for w in (1, 2, 4)}

table = Struct(
    "pointers" / NumpyArray("u1", (this._.tok_cnt, this._.k))
    * "tok_cnt pointers of k bytes each (little-endian byte offsets into tokenized)",
)

offset = Struct("offsets" / NumpyArray("<u8", this._.doc_cnt) * "u64 byte offset of each document's SEP")

metaoff = Struct("offsets" / NumpyArray("<u8", this._.doc_cnt) * "u64 byte offset of each metadata line")
