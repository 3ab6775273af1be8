"""The infini-gram index folder as the registry sees it before the codec is imported (standard library only)."""

from __future__ import annotations

from pathlib import Path

from ...registry import Sniffer
from ...schemas.identity import INFINIGRAM_KINDS as KINDS
from ...schemas.identity import INFINIGRAM_REQUIRED

NAME = "infini-gram"


def shard_files(directory: Path) -> dict[str, dict[str, Path]]:
    """Shard name -> its files: v4/v5 suffixed files (``table.0``), or v6 shard directories (``table``)."""
    found: dict[str, dict[str, Path]] = {}
    for p in sorted(directory.iterdir(), key=lambda p: p.name):
        kind, _, suffix = p.name.partition(".")
        if p.is_file() and kind in KINDS:
            found.setdefault(suffix, {})[kind] = p
    if not found:  # v6: one directory per shard, files without suffix
        for sub in sorted((p for p in directory.iterdir() if p.is_dir()), key=lambda p: p.name):
            files = {p.name: p for p in sub.iterdir() if p.is_file() and p.name in KINDS}
            if INFINIGRAM_REQUIRED[0] in files:
                found[sub.name] = files
    return found


def sniff_index(path: Path) -> bool:
    shards = shard_files(Path(path))
    return bool(shards) and all(set(INFINIGRAM_REQUIRED) <= set(files) for files in shards.values())


INFINIGRAM = Sniffer(NAME, (), sniff_index, priority=10, is_directory=True,
                     commands=("`wvformats infinigram count FILE IDS...` counts token sequences in it",),
                     lookups="infinigram count", built_by="infinigram build")
FORMATS = (INFINIGRAM,)
