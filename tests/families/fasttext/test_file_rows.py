"""A lookup of one word in a model mapped from its file reads the rows of regions of the file it has not read
before with pread (wvformats.families.fasttext.filerows), not through the map: Linux maps each page-cache folio a
fault lands in whole (up to 2 MB a row), which made an open and one lookup of a 200k x 100 model hold ~12 MB of
the file (issue 39 item 6). The rows' bits are the map's, in the kernel and its pure-Python twin."""

import gc
import mmap
import os
import sys

import numpy as np
import pytest
from families.fasttext.test_fasttext import unsupervised_model
from hypothesis import given
from hypothesis import strategies as st

import wvformats as wv
from wvformats import compiled
from wvformats.families.fasttext import filerows
from wvformats.families.fasttext.filerows import REGION_BITS
from wvformats.framework import mapped as maps

FT = compiled.kernel("wvformats.families.fasttext._kernel")
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/pagemap: Linux")
# unknown words and one word of the vocabulary (its first lookup: a second word of its chunk would compose the
# chunk, through the map), each composed by a lookup of one word
WORDS = ["kangaroo", "w12", "zzqxv", "quokka", "kangaroo", "wombats", "platypus", "zzqxv"]




@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    return unsupervised_model(tmp_path_factory.mktemp("filerows") / "m.bin")


def _pages(start: int, end: int) -> np.ndarray:
    """Whether each page of the addresses ``[start, end)`` is mapped in this process (/proc/self/pagemap's bit
    63), found without touching them."""
    page = mmap.PAGESIZE
    first, last = start // page, (end - 1) // page
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(first * 8)
        return np.frombuffer(f.read(8 * (last - first + 1)), "<u8") >> 63 == 1


def _present(a: np.ndarray, row: int) -> bool:
    """Whether every page of ``a``'s row ``row`` is mapped in this process."""
    start = a.__array_interface__["data"][0] + row * a.strides[0]
    return bool(_pages(start, start + a.shape[1] * a.itemsize).all())


@linux
def test_the_open_lets_go_of_the_pages_the_parse_read(model_file):
    """Once the model holds the dictionary, the map holds none of the pages the parse read (the header, the
    dictionary: 4.5 MB of the issue's model when its pages are cached in 2 MB folios); before, the dictionary's last
    pages (its words' decode lets go of the pages before) stayed mapped."""
    m = wv.read(model_file, mmap=True)
    data = m.input.part["data"]
    base = np.frombuffer(filerows.mapping(data), np.uint8).__array_interface__["data"][0]
    assert not _pages(base, data.__array_interface__["data"][0]).any()


@linux
@pytest.mark.usefixtures("kernels")  # with the C kernel and with its pure-Python twin
def test_a_lookup_of_one_word_maps_no_region_of_the_file_read_for_the_first_time(model_file):
    """Each row a lookup of one word reads (its own, its n-grams') is read with pread when no row of its 2 MB region
    of the file was read before, and its pages stay out of the process; through the map after. Before, every row
    was read through the map: each of these rows' pages was mapped (and with them the whole folio: up to 2 MB)."""
    m = wv.read(model_file, mmap=True)
    data = m.input.part["data"]
    first = m._file_rows().first
    seen: set[int] = set()  # regions a row was read in
    mapped: set[int] = set()  # regions a row was read in through the map (a fault maps up to the whole region)
    fresh = old = 0
    for word in WORDS:
        rows = m.subword_rows(word)  # (computed from the hashes: no row read)
        m.embedding(word)
        preads = []
        for r in rows:  # in the order the lookup reads them
            at = first + r * data.strides[0]
            regions = {at >> REGION_BITS, (at + 4 * data.shape[1] - 1) >> REGION_BITS}
            if regions <= seen:
                assert _present(data, r), f"{word!r}: row {r} of a region read before was not read through the map"
                mapped |= regions
                old += 1
            else:
                preads.append((r, regions))
            seen |= regions
        for r, regions in preads:
            if not regions & mapped:
                assert not _present(data, r), f"{word!r}: row {r}, of a region not read before, was mapped"
                fresh += 1
    assert fresh >= 5 and old >= 10  # both kinds of read were seen


def test_rows_read_from_the_file_are_the_maps(model_file, monkeypatch):
    """Every word's vector, and unknown words', read with pread and through the map (the same words twice) are
    those of the model read into memory, bit for bit, with the kernel and with its pure-Python twin; the two mark
    the same regions read."""
    from wvformats.families.fasttext import model

    copy = wv.read(model_file, mmap=False)
    assert copy._file_rows() is None  # in memory: nothing to read from a file
    words = [*WORDS[:3], *copy.words[:60], *WORDS[:3]]
    regions = []
    for kernel in (model._K, None):
        monkeypatch.setattr(model, "_K", kernel)
        m = wv.read(model_file, mmap=True)
        reads = m._file_rows()
        for word in words:
            assert m.get_word_vector(word).tobytes() == copy.get_word_vector(word).tobytes(), word
        regions.append(reads.regions if reads is not None else None)
    assert regions[0] == regions[1]
    if sys.platform.startswith("linux"):
        assert 5 <= sum(regions[0]) < len(regions[0])


def test_the_file_is_found_from_the_map_and_closed_with_the_model(model_file, tmp_path):
    """The file of a mapped model is opened again from the path fileio recorded for its map, checked to be the
    mapped one (its device and inode): a file replaced at that path, or removed, is not read (rows through the map);
    the descriptor is closed when the model goes, or once every region of the matrix has been read."""
    m = wv.read(model_file, mmap=True)
    reads = m._file_rows()
    assert os.path.samestat(os.fstat(reads.fd), os.stat(model_file))
    assert reads.first == m.input.part["data"].__array_interface__["data"][0] - \
        np.frombuffer(filerows.mapping(m.input.part["data"]), np.uint8).__array_interface__["data"][0]
    fd = reads.fd
    del m, reads
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)

    moved = unsupervised_model(tmp_path / "moved.bin", bucket=20_000, seed=1)
    m = wv.read(moved, mmap=True)
    want = wv.read(moved, mmap=False).get_word_vector("kangaroo")
    unsupervised_model(tmp_path / "other.bin", bucket=20_000, seed=2).replace(moved)  # another file at the path
    assert m._file_rows() is None
    assert m.get_word_vector("kangaroo").tobytes() == want.tobytes()
    gone = wv.read(moved, mmap=True)
    moved.unlink()
    assert gone._file_rows() is None
    small = wv.read(unsupervised_model(tmp_path / "small.bin", bucket=20_000), mmap=True)  # a matrix in one region
    reads = small._file_rows()
    assert reads is not None and len(reads.regions) == 1
    small.embedding("kangaroo")  # every region read: the file is closed, rows come from the map
    assert small._reads is None and not reads._close.alive
    assert small.embedding("quokka").tobytes() == wv.read(tmp_path / "small.bin").embedding("quokka").tobytes()
    m = wv.read(model_file, mmap=True)
    found = maps.mapped_file
    assert found(filerows.mapping(m.input.part["data"]))[0] == os.path.abspath(model_file)
    other = lambda buf: (lambda f: (f[0], f[1], f[2] + 1))(found(buf))  # noqa: E731
    with pytest.MonkeyPatch.context() as patch:  # the path names a file of another inode
        patch.setattr(maps, "mapped_file", other)
        assert m._file_rows() is None
    assert m._file_rows() is not None
    with open(model_file, "rb") as f:  # a map fileio did not make: rows through it
        assert filerows.file_rows(np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), np.float32,
                                                64).reshape(8, 8)) is None


def test_mean_file_rows_checks_its_arguments(tmp_path):
    """mean_file_rows' fd, first and regions: refused when they do not fit the matrix (a region byte short, an offset
    whose rows would end past the largest one, strided rows, a negative descriptor, read-only regions); a
    descriptor that reads nothing (closed, a file too short) leaves the rows to the map."""
    if FT is None:
        pytest.skip("the compiled kernel is not built")  # (the kernel tests need it: test_compiled fails then)
    m = np.arange(6 * 4, dtype=np.float32).reshape(6, 4)
    want = FT.mean_rows(m, [1, 5, 1], np.empty(4, np.float32)).tobytes()
    f = tmp_path / "rows"
    f.write_bytes(b"\xff" * 3 * (1 << REGION_BITS))
    fd = os.open(f, os.O_RDONLY)
    try:
        regions = bytearray(3)
        for bad, error in [((fd, 0, bytearray(0)), ValueError), ((fd, 2 << REGION_BITS, bytearray(2)), ValueError),
                           ((fd, 2**63 - 50, bytearray(8)), ValueError), ((-1, 0, regions), ValueError),
                           ((fd, -1, regions), ValueError), ((fd, 0, bytes(3)), BufferError),
                           ((fd, 0, "abc"), TypeError), ((fd, 2**64, regions), OverflowError)]:
            with pytest.raises(error):
                FT.mean_file_rows(m, [1], np.empty(4, np.float32), *bad)
        with pytest.raises(ValueError, match="contiguous"):
            FT.mean_file_rows(m[:, ::2], [1], np.empty(2, np.float32), fd, 0, regions)
        # rows read from this file of 0xff bytes: NaN where the map has numbers, in regions not read yet
        got = FT.mean_file_rows(m, [1, 5, 1], np.empty(4, np.float32), fd, (1 << REGION_BITS) - 40, regions)
        assert np.isnan(got).all() and regions == bytearray([1, 1, 0])
        again = FT.mean_file_rows(m, [1, 5], np.empty(4, np.float32), fd, (1 << REGION_BITS) - 40, regions)
        assert again.tobytes() == FT.mean_rows(m, [1, 5], np.empty(4, np.float32)).tobytes()  # both regions read
        # a file that ends before the rows: the map's
        got = FT.mean_file_rows(m, [1, 5, 1], np.empty(4, np.float32), fd, 3 << REGION_BITS, bytearray(4))
        assert got.tobytes() == want
        assert FT.mean_file_rows(m, [], np.empty(4, np.float32), fd, 0, bytearray(1)).tobytes() == bytes(16)
    finally:
        os.close(fd)
    bad_fd = FT.mean_file_rows(m, [1, 5, 1], np.empty(4, np.float32), 2**30, 0, bytearray(1))  # EBADF: the map's
    assert bad_fd.tobytes() == want


@given(st.integers(1, 6), st.integers(0, 5), st.data())
def test_mean_file_rows_is_the_maps_for_any_layout(tmp_path_factory, nrows, dim, data):
    """A matrix written to a file at any offset (across region boundaries) and read back with pread gives the
    mapped matrix's bits, whatever regions were read before."""
    if FT is None:
        pytest.skip("the compiled kernel is not built")
    m = data.draw(st.lists(st.floats(width=32, allow_nan=False), min_size=nrows * dim, max_size=nrows * dim))
    m = np.array(m, np.float32).reshape(nrows, dim)
    rows = data.draw(st.lists(st.integers(0, nrows - 1), max_size=8))
    first = data.draw(st.sampled_from([0, 3, (1 << REGION_BITS) - 4 * dim - 1, (1 << REGION_BITS) - 5]))
    path = tmp_path_factory.mktemp("rows") / "m"
    with open(path, "wb") as f:
        f.seek(first)
        f.write(m.tobytes())
    regions = bytearray(data.draw(st.lists(st.sampled_from([0, 1]), min_size=2, max_size=2)))
    fd = os.open(path, os.O_RDONLY)
    try:
        got = FT.mean_file_rows(m, rows, np.empty(dim, np.float32), fd, first, regions)
    finally:
        os.close(fd)
    assert got.tobytes() == FT.mean_rows(m, rows, np.empty(dim, np.float32)).tobytes()
