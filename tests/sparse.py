"""A file whose data is a hole (a sparse file), for the tests that hold a read to its header."""

import tracemalloc
from pathlib import Path

import wvformats as wv


def inspect_of_sparse(path: Path, head: bytes, data_bytes: int) -> dict:
    """``wv.inspect`` of a file of ``head`` then ``data_bytes`` of data (a hole: nothing on disk), asserting it
    held less than 1 MB: the summary was made from the header, no data read."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(len(head) + data_bytes)
    tracemalloc.start()
    try:
        info = wv.inspect(path)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    return info
