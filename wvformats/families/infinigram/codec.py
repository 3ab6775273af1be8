"""Codec of infini-gram index directories (v4/v5 suffixed shard files, v6 shard directories)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import BuildError
from ...registry import Format, register
from ...schemas import infinigram as schema
from .index import NAME, InfiniGramIndex, check
from .sniff import INFINIGRAM


def parse(path: Path, **options: Any) -> InfiniGramIndex:
    return InfiniGramIndex(path, token_width=options.get("token_width"), version=options.get("version") or 4)


def inspect(index: InfiniGramIndex) -> dict[str, Any]:
    disk = {p.name: p.stat().st_size for p in sorted(index.directory.iterdir()) if p.is_file()}
    return {"tokens": index.tok_cnt, "documents": index.doc_cnt, "token_width": index.token_width,
            "pointer_width": [s.k for s in index.shards], "shards": len(index.shards), "disk_bytes": disk}


def _no_build(*_: Any, **__: Any) -> Any:
    raise BuildError("write infini-gram indexes with wvformats.infinigram.build(docs, out_dir, ...)", format=NAME)


register(Format(
    **INFINIGRAM._asdict(), description="infini-gram index directory: tokenized corpus, suffix array of "
    "k-byte pointers, document offsets, optional metadata and unigram counts (no headers: sizes give counts)",
    schema=None, parse=parse, build=_no_build, to_model=lambda index, **_: index,
    from_model=_no_build, model=InfiniGramIndex, inspect=inspect, check=check,
    inspect_head=lambda path, complete=True, **options: inspect(parse(path, **options)),  # (opening reads sizes)
    read_options=("token_width", "version"),
    schemas={"table": schema.table, "offset": schema.offset, "metaoff": schema.metaoff,
             **{f"tokenized (u{8 * w})": s for w, s in schema.tokenized.items()}},
))
