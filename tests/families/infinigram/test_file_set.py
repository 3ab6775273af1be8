"""The infini-gram sniffer reads a folder through the file set ``schemas/identity.py`` declares
(``INFINIGRAM_FILES``), which must find every file where the indexer's naming (``infinigram_name``) puts it."""

import pytest
from wvformats.schemas.identity import (
    INFINIGRAM_FILES,
    INFINIGRAM_KINDS,
    INFINIGRAM_REQUIRED,
    INFINIGRAM_VERSIONS,
    infinigram_name,
)

from wvformats.families.infinigram.sniff import shard_files, sniff_index


@pytest.mark.parametrize("version", INFINIGRAM_VERSIONS)
@pytest.mark.parametrize("shards", [1, 3])
def test_the_declared_file_set_finds_each_file_where_the_indexer_names_it(tmp_path, version, shards):
    named = {(str(s), kind): tmp_path / infinigram_name(kind, s, version=version, shards=shards)
             for s in range(shards) for kind in INFINIGRAM_KINDS}
    for path in named.values():
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"")
    (tmp_path / "README").write_bytes(b"")  # (not a file of the set)
    found = shard_files(tmp_path)
    bare = version == 6 and shards == 1  # one shard's files without suffix: the shard named ""
    assert {(shard, kind): path for shard, files in found.items() for kind, path in files.items()} == {
        ("" if bare else s, kind): path for (s, kind), path in named.items()}
    assert sniff_index(tmp_path)
    named[("0", INFINIGRAM_REQUIRED[-1])].unlink()  # a shard without a required file
    assert not sniff_index(tmp_path)


def test_the_file_set_reads_listings():
    assert INFINIGRAM_FILES.in_folder(["table.0", "offset.0", "tokenized.0", "tokenized.1", "x.0", "table"]) == {
        "0": {"table": "table.0", "offset": "offset.0", "tokenized": "tokenized.0"}, "1": {"tokenized": "tokenized.1"},
        "": {"table": "table"}}
    assert INFINIGRAM_FILES.in_subfolder(["table", "offset", "unigram"]) is None  # no tokenized: no shard
    assert INFINIGRAM_FILES.in_subfolder(["tokenized", "metadata"]) == {"tokenized": "tokenized", "metadata": "metadata"}
    assert not INFINIGRAM_FILES.plausible({}) and not INFINIGRAM_FILES.plausible({"1": {"tokenized": "tokenized.1"}})
