"""Every bundled sample of every format, cut and corrupted: FormatError or a clean parse, nothing else."""

import numpy as np
import pytest

from wvformats import registry
from wvformats.errors import FormatError
from wvformats.samples import sample_files

FILES = [p for p in sample_files() if p.is_file()]
# cut text files may read with a NoFinalNewlineWarning (their own tests check it); the point here is errors
pytestmark = pytest.mark.filterwarnings("ignore::wvformats.errors.NoFinalNewlineWarning")


def _foreign(e):
    """An error in words not ours: numpy's, construct's or Python's (see tests/test_fuzz.py)."""
    from wvformats import framework

    return framework.UNCHECKED in str(e) or "stream read less than specified amount" in str(e)


def _fmt(path):
    from wvformats.api import sniff

    return registry.get(sniff(path))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_truncation_fails_cleanly(path):
    fmt = _fmt(path)
    data = path.read_bytes()
    step = max(1, len(data) // 400)
    for n in range(0, len(data), step):
        try:
            fmt.parse(data[:n])
        except FormatError as e:
            assert e.format == fmt.name and not _foreign(e), str(e)
        # a clean parse of a prefix is allowed only where the format has no length to contradict it
        # (GloVe cut at a line break); the format tests assert which prefixes must fail


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_random_corruptions_fail_cleanly(path):
    fmt = _fmt(path)
    data = path.read_bytes()
    rng = np.random.default_rng(len(data))
    for _ in range(300):
        bad = bytearray(data)
        for i in rng.integers(0, len(data), size=int(rng.integers(1, 4))):
            bad[i] = int(rng.integers(0, 256))
        try:
            fmt.parse(bytes(bad))
        except FormatError as e:
            assert e.format == fmt.name and (e.offset is None or e.offset >= 0) and not _foreign(e), str(e)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_hostile_lengths_do_not_allocate(path):
    """Every aligned u32/u64 in the first 256 bytes set to huge values: FormatError, no MemoryError."""
    fmt = _fmt(path)
    data = path.read_bytes()
    for width, value in ((4, 0xFFFFFFFF), (4, 0x7FFFFFFF), (8, 2**63), (8, 2**64 - 1)):
        for off in range(0, min(len(data), 256) - width + 1, width):
            bad = bytearray(data)
            bad[off : off + width] = value.to_bytes(width, "little")
            try:
                fmt.parse(bytes(bad))
            except FormatError as e:
                assert not _foreign(e), str(e)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_in_memory_reads_equal_mmap_reads_and_are_writable(path):
    """mmap=False reads the file into memory (an uninitialised numpy buffer): the same model as the
    zero-copy read, with bulk arrays that can be written without touching the file."""
    from collections.abc import Mapping

    import numpy as np

    import wvformats as wv
    from wvformats.families.fasttext.model import FastText

    before = path.read_bytes()
    a, b = wv.read(path, mmap=True), wv.read(path, mmap=False)
    assert type(a) is type(b)
    if hasattr(a, "vectors"):
        assert a.words == b.words and a.vectors.tobytes() == b.vectors.tobytes()
        if b.vectors.size and isinstance(b, FastText):  # composed vectors, read-only by design (issue 27)
            with pytest.raises(ValueError, match="read-only"):
                b.vectors[0, 0] += 1
        elif b.vectors.size:
            b.vectors[0, 0] += 1
            assert path.read_bytes() == before
    elif hasattr(a, "tensors"):
        assert list(a.tensors) == list(b.tensors)
        assert all(np.array_equal(a.tensors[k].blocks, b.tensors[k].blocks) for k in a.tensors)
    elif isinstance(a, (np.ndarray, dict, Mapping)):  # an array (npy), arrays by name (safetensors, npz)
        arrays_a, arrays_b = ({"": a}, {"": b}) if isinstance(a, np.ndarray) else (a, b)
        assert list(arrays_a) == list(arrays_b)
        assert all(arrays_a[k].tobytes() == arrays_b[k].tobytes() for k in arrays_a)
        for array in arrays_b.values():
            if array.size:
                array.reshape(-1).view(np.uint8)[0] ^= 1
        assert path.read_bytes() == before
    else:
        assert a.piece_strings == b.piece_strings


@pytest.mark.parametrize("fmt,path,expected", [("leader", "magic", 38941), ("finalfusion", "magic", b"FiFu"),
                                               ("rwkv", "header.magic", 0x67676D66)])
def test_a_wrong_magic_is_named_where_it_starts_with_both_values(tmp_path, fmt, path, expected):
    import wvformats as wv

    p = tmp_path / "junk"
    p.write_bytes(b"13 10\n" + b"x" * 100)
    with pytest.raises(FormatError) as caught:
        wv.read(p, fmt)
    e = caught.value
    assert (e.format, e.path, e.offset, e.expected) == (fmt, path, 0, expected)
    assert e.found in (b"13 1", int.from_bytes(b"13 10\nxx"[: 8 if fmt == "leader" else 4], "little"))
    assert str(e) == f"{fmt} {path} at byte 0: constant field does not match (expected {expected!r}, found {e.found!r})"


def test_a_word2vec_dimension_past_the_data_names_the_vector_it_cuts(tmp_path):
    """A header dimension larger than the data: the first vector is named, with the bytes it needs and the
    bytes left (numpy's "window shape cannot be larger than input array shape" came out of the record
    walk's window of a row). gensim refuses the same files ("unexpected end of input")."""
    from gensim.models import KeyedVectors

    import wvformats as wv
    from wvformats.errors import TruncatedError
    from wvformats.samples import sample_dir

    sample = (sample_dir() / "sample.bin").read_bytes()
    assert sample.startswith(b"20 8\n</s> ")
    cases = [(sample.replace(b"20 8\n", b"20 400\n", 1), 12, 1600, len(sample) - 10),
             (sample.replace(b"20 8\n", b"20 1000\n", 1), 13, 4000, len(sample) - 10),
             (b"1 100\nab " + bytes(10), 9, 400, 10)]  # shorter than the walk's word window
    for i, (data, at, needs, left) in enumerate(cases):
        p = tmp_path / f"dim{i}.bin"
        p.write_bytes(data)
        with pytest.raises(EOFError):
            KeyedVectors.load_word2vec_format(str(p), binary=True)
        for call in (wv.read, wv.inspect):
            with pytest.raises(TruncatedError) as caught:
                call(p, "word2vec-binary")
            e = caught.value
            assert (e.format, e.path, e.offset) == ("word2vec-binary", "records[0].vector", at)
            assert e.message == f"vector needs {needs} bytes, only {left} remain"
        assert wv.validate(p, "word2vec-binary").error == str(e)


def test_finalfusion_array_dimensions_that_overflow_name_the_array(tmp_path):
    """Matrix dimensions no array can have (rows 2^64 - 1 by 0 columns; 2^62 x 16 x 0 subquantizers): the
    array field is named with its dimensions (numpy's "Maximum allowed dimension exceeded" and "array is too
    big" came out, at no field). The finalfusion peer refuses the file too."""
    import subprocess
    import sys

    import construct as cs

    import wvformats as wv
    from wvformats.errors import ValueMismatchError
    from wvformats.samples import sample_dir

    data = bytearray((sample_dir() / "sample-simple.fifu").read_bytes())
    assert data[196:208] == (8).to_bytes(8, "little") + (8).to_bytes(4, "little")  # the ndarray's rows, cols
    data[196:208] = (2**64 - 1).to_bytes(8, "little") + (0).to_bytes(4, "little")
    p = tmp_path / "rows.fifu"
    p.write_bytes(bytes(data))
    peer = subprocess.run([sys.executable, "-c", f"import finalfusion; finalfusion.load_finalfusion({str(p)!r})"],
                          capture_output=True, text=True, timeout=120)
    assert peer.returncode != 0 and "Error" in peer.stderr
    with pytest.raises(ValueMismatchError) as caught:
        wv.read(p)
    e = caught.value
    assert (e.format, e.path, e.offset) == ("finalfusion", "chunks[2].ndarray.data", 216)
    assert e.found == (2**64 - 1, 0)
    assert e.message == "array dimensions (18446744073709551615, 0) of <f4 are larger than any array can be"

    from wvformats import framework

    schema = cs.Struct("n" / cs.Int64ul, "codes" / framework.NumpyArray("<f4", (cs.this.n, 16, 0)))
    with pytest.raises(ValueMismatchError) as caught:
        framework.parse(schema, (2**62).to_bytes(8, "little"), format="test")
    assert (caught.value.path, caught.value.offset, caught.value.found) == ("codes", 8, (2**62, 16, 0))


def test_a_file_cut_inside_a_fixed_field_says_so_in_our_words(tmp_path):
    """A file that ends inside a fixed-size field (construct's "stream read less than specified amount,
    expected 4, found 3"): how many bytes the field needs, how many remain, where the field starts."""
    import wvformats as wv
    from wvformats.errors import TruncatedError
    from wvformats.samples import sample_dir

    p = tmp_path / "cut.fifu"
    p.write_bytes((sample_dir() / "sample-simple.fifu").read_bytes()[:11])
    for call in (lambda: wv.read(p), lambda: wv.inspect(p)):
        with pytest.raises(TruncatedError) as caught:
            call()
        e = caught.value
        assert (e.format, e.path, e.offset) == ("finalfusion", "n_chunks", 8)
        assert str(e) == "finalfusion n_chunks at byte 8: the field needs 4 bytes but only 3 remain"


def test_protobuf_errors_name_the_field_index(tmp_path):
    import wvformats as wv

    p = tmp_path / "cut.model"
    p.write_bytes(b"\x0a\x03abc\x10")  # a field, then a tag whose varint value is missing
    with pytest.raises(FormatError) as caught:
        wv.read(p, "sentencepiece")
    assert caught.value.path == "fields[1]" and caught.value.offset == 6


def test_fuzzer_findings_fail_cleanly_or_work(tmp_path):
    """Found by a fuzz campaign over the samples: an empty table with a dimension of 2^40 (lookups then
    allocated words x dim), a bucket vocabulary's max_n of 2^24 (the batch n-gram arrays were sized by
    it), and inspect of a valid floret file (KeyError: it has no word list)."""
    import construct as cs

    import wvformats as wv
    from wvformats.samples import sample_files

    samples = {p.name: p for p in sample_files()}
    leader = samples["sample.leader"].read_bytes()
    for dim in (2**40, 2**31 - 1):  # no rows: nothing but this check keeps lookups from allocating words x dim
        for fmt, data in [("leader", leader[:8] + (0).to_bytes(8, "little") + dim.to_bytes(8, "little")),
                          ("word2vec-text", b"0 %d\n" % dim), ("word2vec-binary", b"0 %d\n" % dim)]:
            p = tmp_path / fmt
            p.write_bytes(data)
            with pytest.raises(FormatError, match=f"dimension {dim} is larger than 2\\^24") as e:
                wv.read(p, fmt)
            assert "expected None" not in str(e.value)
    p.write_bytes(b"0 %d\n" % 2**24)  # the largest dimension taken
    assert wv.read(p, "word2vec-binary").embedding_batch(["x"])[0].shape == (1, 2**24)
    data = bytearray(samples["sample-bucket.fifu"].read_bytes())
    assert int.from_bytes(data[44:48], "little") == 6  # the bucket vocabulary's max_n
    data[44:48] = (2**24).to_bytes(4, "little")
    p = tmp_path / "maxn.fifu"
    p.write_bytes(bytes(data))
    emb = wv.read(p)
    batch, found = emb.embedding_batch(["zzqxv", "hallöchen"])
    assert found.all() and np.array_equal(batch[1], emb.embedding("hallöchen"))
    chunks = [cs.Container(chunk_id=9, name="floret_subword_vocab", body=cs.Container(
                  min_n=3, max_n=6, n_buckets=12, n_hashes=2, seed=7, bow="<", eow=">")),
              cs.Container(chunk_id=2, name="ndarray", body=cs.Container(
                  rows=12, cols=4, type_id=10, padding=None, data=np.ones((12, 4), "<f4")))]
    p = tmp_path / "floret.fifu"
    with open(p, "wb") as f:
        wv.registry.get("finalfusion").build(cs.Container(magic=b"FiFu", version=0, n_chunks=2,
                                                          chunk_ids=np.array([9, 2], "<u4"), chunks=chunks), f)
    info = wv.inspect(p)
    assert info["words"] == 0 and info["dim"] == 4


def test_fuzzer_findings_in_models_and_queries(tmp_path):
    """Corruptions that parse but broke a later call (found by fuzzing; each raised IndexError, TypeError or
    ValueError): FormatError now, or a clean answer where the file still means something."""
    import shutil

    import construct as cs

    import wvformats as wv
    from wvformats.samples import sample_files

    samples = {p.name: p for p in sample_files()}
    # protobuf: a shorter trainer_spec.input leaves "xt": shrinking_factor (a float) as a varint, which is an
    # unknown field as protobuf reads it (it raised before); the view gives the default, the file rebuilds
    data = bytearray(samples["sample-bpe.model"].read_bytes())
    data[914] = 0x0D
    p = tmp_path / "bad.model"
    p.write_bytes(bytes(data))
    spec = wv.read(p).trainer_spec
    assert [(f["number"], f["wire_type"]) for f in spec.unknown] == [(15, 0)]
    assert spec.input == ["/tmp/corpus.t"] and spec.shrinking_factor == np.float32(0.75) and wv.validate(p).ok
    # infini-gram: a metadata offset past its file, no offsets at all, an offset of 2^63
    for name, edit in [("metaoff.0", lambda b: b[:16] + b"\xff\xff" + b[18:]), ("offset.0", lambda b: b""),
                       ("offset.0", lambda b: b[:-8] + (2**63).to_bytes(8, "little"))]:
        index = tmp_path / f"index-{name}-{len(list(tmp_path.iterdir()))}"
        shutil.copytree(samples["sample-index"], index)
        (index / name).write_bytes(edit((index / name).read_bytes()))
        try:
            engine = wv.read(index)
        except FormatError:
            continue
        calls = [(engine.get_doc_by_rank, (0, 0))]
        calls += [(engine.get_doc_by_ix, (engine.doc_cnt - 1,))] if engine.doc_cnt else []
        for call, args in calls:
            try:
                call(*args)
            except FormatError:
                pass
        report = wv.validate(index, full=True)
        assert not report.ok and report.problems
    # finalfusion: a quantized code past its centroids; a vocabulary whose max_n is below its min_n
    q = cs.Container(use_projection=0, use_norms=0, quantized_len=1, reconstructed_len=2, n_centroids=4,
                     n_embeddings=2, quantized_type=1, reconstructed_type=10, padding=None, projection=None,
                     subquantizers=np.ones((1, 4, 2), "<f4"), norms=None, codes=np.array([[0], [7]], "u1"))
    obj = cs.Container(magic=b"FiFu", version=0, n_chunks=2, chunk_ids=np.array([1, 4], "<u4"), chunks=[
        cs.Container(chunk_id=1, name="simple_vocab", body=cs.Container(n_words=2, words=["a", "b"])),
        cs.Container(chunk_id=4, name="quantized_array", body=q)])
    p = tmp_path / "q.fifu"
    with open(p, "wb") as f:
        wv.registry.get("finalfusion").build(obj, f)
    emb = wv.read(p)  # opening reads no codes (a quantized file opens lazily); the rows that use one fail
    assert emb["a"].tolist() == [1.0, 1.0]
    for lookup in (lambda: emb["b"], lambda: emb.vectors, lambda: emb.embedding_batch(["b"])):
        with pytest.raises(FormatError, match="a code picks centroid 7 of 4"):
            lookup()
    data = bytearray(samples["sample-bucket.fifu"].read_bytes())
    data[40:48] = (7).to_bytes(4, "little") + (4).to_bytes(4, "little")  # min_n 7, max_n 4
    p = tmp_path / "minmax.fifu"
    p.write_bytes(bytes(data))
    emb = wv.read(p)
    assert emb.embedding("zzqxv") is None
    assert not emb.embedding_batch(["zzqxv", "hallöchen"])[1].any()


def test_huge_rwkv_layer_count_is_reported_not_enumerated(tmp_path):
    """A header claiming 2^32 - 1 layers: check() reports it at once (it listed every layer's keys: minutes
    and gigabytes, found by fuzzing)."""
    import wvformats as wv
    from wvformats.samples import sample_files

    data = bytearray(next(p for p in sample_files() if p.name == "sample-rwkv-q5_1.bin").read_bytes())
    data[16:20] = (2**32 - 1).to_bytes(4, "little")
    p = tmp_path / "layers.bin"
    p.write_bytes(bytes(data))
    report = wv.validate(p)
    assert not report.ok and report.problems[0] == "the header says 4294967295 layers, the file holds 24 tensors"


def test_rwkv_layer_keys_that_name_no_layer_are_reported(tmp_path):
    """Layer indices check() cannot count: a Unicode digit ('\u00b2'.isdigit() holds, int() refuses it: a bare
    ValueError), an index past the tensor count beside a header claiming 2^32 - 1 layers (the keys of 10^8
    layers were listed: MemoryError), 5,000 digits (more than int() takes). check() names them (found by fuzzing)."""
    from collections import OrderedDict

    import wvformats as wv
    from wvformats.families.ggml.rwkv import RwkvModel, Tensor
    from wvformats.samples import sample_files

    sample = wv.read(next(p for p in sample_files() if p.name == "sample-rwkv-q5_1.bin"))

    def renamed(key, n_layer=1):
        tensors = OrderedDict()
        for k, t in sample.tensors.items():
            k = key if k == "blocks.0.ln1.weight" else k
            tensors[k] = Tensor(k, t.dtype, t.shape, t.blocks)
        header = dict(version=101, n_vocab=sample.n_vocab, n_embed=sample.n_embed, n_layer=n_layer,
                      data_type=sample.data_type)
        path = tmp_path / "renamed.bin"
        wv.write(RwkvModel(header, tensors), path, "rwkv", overwrite=True)
        report = wv.validate(path)
        assert report.first_difference is None and not report.ok
        return report.problems

    for digit in ("\u00b2", "\u0663"):  # superscript two; Arabic-Indic three, which int() takes
        key = f"blocks.{digit}.ln1.weight"
        assert renamed(key) == ["missing keys for RWKV v4: blocks.0.ln1.weight",
                                f"keys RWKV v4 does not use: {key}"]
    problems = renamed("blocks.99999999.ln1.weight", n_layer=2**32 - 1)
    assert problems[:2] == ["layer indices past the file's 24 tensors: blocks.99999999.ln1.weight",
                            "the header says 4294967295 layers, the file holds 24 tensors"]
    long = "blocks." + "9" * 5000 + ".ln1.weight"
    assert renamed(long)[0] == f"layer indices past the file's 24 tensors: {long}"
    assert renamed("blocks.0024.ln1.weight") == ["layer indices past the file's 24 tensors: blocks.0024.ln1.weight",
                                                 "missing keys for RWKV v4: blocks.0.ln1.weight"]  # named once


def test_first_use_from_several_threads_sees_every_format():
    """Threads that make their first wvformats call at once: the registry is loaded once, and a thread that
    arrives while another imports the codecs waits for them (it saw a partial registry: UnknownFormatError)."""
    import subprocess
    import sys

    code = """
import threading, wvformats as wv
from wvformats.samples import sample_files
paths = [p for p in sample_files()] * 2
errors = []
def go(p):
    try:
        wv.sniff(p)
    except Exception as e:
        errors.append(repr(e))
threads = [threading.Thread(target=go, args=(p,)) for p in paths]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(errors))
"""
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.stdout.strip() == "0", out.stdout + out.stderr


def test_bytes_after_the_end_of_the_data_are_named_where_the_data_ends(tmp_path):
    """A fastText model with bytes after its output matrix (found by fuzzing: 'unchecked input:
    TerminatedError'): the format's error at the byte where its data ends, with how many bytes follow."""
    import wvformats as wv
    from wvformats.errors import ValueMismatchError
    from wvformats.samples import sample_dir

    good = (sample_dir() / "sample-supervised.ftz").read_bytes()
    bad = tmp_path / "tail.ftz"
    bad.write_bytes(good + b"xyz")
    with pytest.raises(ValueMismatchError, match="the file goes on \\(3 more bytes\\)") as e:
        wv.read(bad)
    assert e.value.format == "fasttext" and e.value.offset == len(good)


@pytest.mark.parametrize(("fmt", "where"), [("word2vec-binary", "records[1]"), ("word2vec-text", "records[1]"),
                                             ("glove", "records[1]"), ("leader", "records[1]"),
                                             ("fasttext", "dictionary.entries.words[1]"),
                                             ("finalfusion", "chunks[0].simple_vocab.words[1]")])
def test_a_word_with_no_utf8_is_refused_naming_it_and_the_format(tmp_path, fmt, where):
    """A lone surrogate (no file's bytes read as one: those are U+DC80..U+DCFF escapes) has no UTF-8: the writer
    refuses it as a BuildError naming the format and the word, and writes nothing."""
    import warnings

    import wvformats as wv
    from wvformats.errors import BuildError

    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (finalfusion normalises the rows: a warning says so)
        with pytest.raises(BuildError) as e:
            wv.write(wv.Embeddings(["a", "b\ud800"], np.ones((2, 3), np.float32)), out, format=fmt)
    assert e.value.format == fmt and e.value.path.startswith(where) and not _foreign(e.value), str(e.value)
    assert not out.exists()
