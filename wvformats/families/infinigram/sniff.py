"""The infini-gram index folder as the registry sees it before the codec is imported (standard library only):
its file set as the schema's identity declares it (``INFINIGRAM_FILES``)."""

from __future__ import annotations

from pathlib import Path

from ...registry import Sniffer
from ...schemas.identity import INFINIGRAM_FILES
from ...schemas.identity import INFINIGRAM_KINDS as KINDS  # noqa: F401 - the kinds, for the index

NAME = "infini-gram"


def shard_files(directory: Path) -> dict[str, dict[str, Path]]:
    """Shard name -> its files: v4/v5 suffixed files (``table.0``), or v6 shard directories (``table``)."""
    entries = sorted(directory.iterdir(), key=lambda p: p.name)
    found = INFINIGRAM_FILES.in_folder([p.name for p in entries if p.is_file()])
    if found:
        return {shard: {kind: directory / name for kind, name in files.items()} for shard, files in found.items()}
    shards: dict[str, dict[str, Path]] = {}
    for sub in (p for p in entries if p.is_dir()):
        files = INFINIGRAM_FILES.in_subfolder([p.name for p in sub.iterdir() if p.is_file()])
        if files is not None:
            shards[sub.name] = {kind: sub / name for kind, name in files.items()}
    return shards


def sniff_index(path: Path) -> bool:
    return INFINIGRAM_FILES.plausible(shard_files(Path(path)))


INFINIGRAM = Sniffer(NAME, (), sniff_index, priority=10, is_directory=True,
                     commands=("`wvformats infinigram count FILE IDS...` counts token sequences in it",),
                     lookups="infinigram count", built_by="infinigram build")
FORMATS = (INFINIGRAM,)
