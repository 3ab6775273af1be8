"""infini-gram indexes: the public names of the ``infinigram`` family.

    import wvformats as wv
    from wvformats import infinigram
    infinigram.build([[5, 6, 7], [6, 7]], "index-dir", token_width=2)   # byte-identical to the real indexer
    index = wv.read("index-dir")                     # an infinigram.InfiniGramIndex (or infinigram.open)
    index.count([6, 7]), infinigram.check(index, full=True)
"""

from .families.infinigram.index import (
    KINDS,
    NAME,
    InfiniGramIndex,
    Shard,
    build,
    build_jsonl,
    check,
    open,
    sep,
    suffix_array,
)

__all__ = ["KINDS", "NAME", "InfiniGramIndex", "Shard", "build", "build_jsonl", "check", "open", "sep",
           "suffix_array"]
