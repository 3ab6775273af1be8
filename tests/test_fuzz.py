"""Mutation fuzzing over every registered format's bundled samples (and a few files of the families' test
data): each mutant is sniffed, read (memory-mapped and, one time in four, not), validated, inspected
(quick and full), dumped and converted, and what its model offers is done with it (every lookup, most_similar,
analogy and predict of word vectors; every tensor's to_numpy; every array of an ``.npz``; a SentencePiece
model's pieces, specs and export to GGUF; infini-gram's count, prob, ntd and documents). Each call works or
fails with the library's own error, naming the format, in words of ours, within a bound of CPU time and of
address space proportional to the input (``tests/fuzzing.py``'s ``Bounds``: 5 s + 2 s per MB, 64 MiB + 64
bytes per input byte), in a forked child, so that a crash is caught as well.

Half the mutants are the generic byte mutations of ``wvformats.testing.fuzz``, half format-aware
(``tests/fuzzing.py``): the fields a schema walks, JSON headers, ``.npy`` header dicts, zip records,
protobuf fields, text headers and lines, word2vec records, infini-gram's index files. Seeded and
deterministic: the header numbers swept, then CASES mutants per sample in CI (a few seconds in all). A longer
campaign runs for a number of seconds in all, spread over the samples, from a seed of your choice, saving
each new bad signature's input with a ``repro.txt`` under ``WVFORMATS_FUZZ_REPROS`` (default: the test's
temporary folder):

    WVFORMATS_FUZZ_SECONDS=900 WVFORMATS_FUZZ_SEED=1 WVFORMATS_FUZZ_REPROS=/tmp/fuzz-repros \\
        python -m pytest tests/test_fuzz.py -q

A failure lists each bad signature once (the call, what went wrong, where, how often) with its saved input;
``mutant(sample, seed, case, out)`` rebuilds an input.
"""

from __future__ import annotations

import functools
import os
import shutil
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzzing import (
    Bad,
    Bounds,
    folder_mutation,
    format_mutation,
    run_forked,
    save_repro,
    signature,
    walked_fields,
    walked_records,
)

import wvformats as wv
from wvformats.errors import FormatError
from wvformats.samples import sample_files
from wvformats.testing.fuzz import header_numbers, mutate_some, ours

_DATA = Path(__file__).parent / "data"
# every format's bundled samples, and from the families' test data: fastText models (a skipgram model with
# character n-grams, an older release of cp852 words, supervised models with the hs loss (its tree) and with
# word n-grams), a
# SentencePiece model with a normalization charsmap, a GGUF vocabulary with a tokenizer (its export to
# SentencePiece), a real .npz and a bf16 safetensors file written by transformers
SAMPLES = sample_files() + [_DATA / "fasttext" / "toy-model.bin", _DATA / "fasttext" / "cp852_fasttext.bin",
                            _DATA / "fasttext" / "trained" / "sup-hs.bin",
                            _DATA / "fasttext" / "trained" / "sup-ngrams.ftz",
                            _DATA / "sentencepiece" / "botchan_en_unigram_1000.model",
                            _DATA / "gguf" / "ggml-vocab-llama-spm.gguf", _DATA / "numpy" / "mel_filters.npz",
                            _DATA / "safetensors" / "transformers-bf16" / "model.safetensors"]
CASES = 6  # mutants per sample in CI (about 10 s of CPU in all, forks included)
SECONDS = float(os.environ.get("WVFORMATS_FUZZ_SECONDS") or 0)  # a longer run: seconds in all
SEED = int(os.environ.get("WVFORMATS_FUZZ_SEED") or 0)
REPROS = os.environ.get("WVFORMATS_FUZZ_REPROS")
BOUNDS = Bounds()


@functools.cache
def _format(sample: Path) -> str:
    return wv.sniff(sample)


_ANATOMY: dict[tuple[str, str], tuple[list, list]] = {}


def _anatomy(fmt: str, name: str, data: bytes) -> tuple[list, list]:
    """The numbers and records of an unmutated file as its schema walks them (once per file)."""
    key = (fmt, name)
    if key not in _ANATOMY:
        _ANATOMY[key] = walked_fields(data, fmt), walked_records(data, fmt)
    return _ANATOMY[key]


def mutant(sample: Path, seed: int, case: int, out: Path) -> tuple[Path, str]:
    """Write mutant ``case`` of ``sample`` (a file, or a folder one of whose files is mutated) under ``out``:
    generic byte mutations or, half the time, a format-aware one (then and again one time in five a generic
    one)."""
    rng = np.random.default_rng([seed, zlib.crc32(sample.name.encode()), case])
    fmt = _format(sample)
    target = out / sample.name
    if target.is_dir():
        shutil.rmtree(target)
    if sample.is_dir():
        shutil.copytree(sample, target)
        if fmt == "infini-gram" and rng.random() < 0.7:
            return target, folder_mutation(target, rng)
        files = sorted(p.name for p in sample.iterdir())
        victim = target / files[int(rng.integers(0, len(files)))]
    else:
        victim = target
        shutil.copyfile(sample, target)
    data = victim.read_bytes()
    done = None
    if rng.random() < 0.5:
        part = "safetensors" if victim.name.endswith(".safetensors") else fmt
        fields, records = _anatomy(part, f"{sample.name}/{victim.name}", data)
        got = format_mutation(part, victim.name, data, fields, records, rng)
        if got is not None:
            data, done = got
            if rng.random() < 0.2:
                data, more = mutate_some(data, rng)
                done += f", then {more}"
    if done is None:
        data, done = mutate_some(data, rng)
    victim.write_bytes(data)
    return target, (f"{victim.name}: " if sample.is_dir() else "") + done


# -- what is done with each mutant ----------------------------------------------------------------------------

def _checked(formats: tuple[str, ...], fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` whose FormatError must name one of ``formats`` (any, where empty) in words of ours."""

    def call() -> Any:
        try:
            got = fn()
        except FormatError as e:
            assert not formats or e.format in formats, f"{e!r} names none of {formats}"
            ours("", str(e))
            return e
        if isinstance(got, wv.ValidationReport):
            assert got.format in formats, got.format
            assert not got.error or got.error.startswith(got.format), got.error
            for text in [got.error or "", *got.problems]:
                ours("", text)
        return got

    return call


def _dump(path: Path, fmt: str) -> int:
    """What ``wvformats dump`` does: the schema walked over the file's bytes, and its hex dump."""
    from wvformats.framework.walk import hexdump

    _, data, spans = wv.api.walk_file(path, fmt)
    return sum(1 for _ in hexdump(spans, data, max_bytes=64, keep=4))


def _predicted(m, lines, **options):
    """``m.predict``, or the ValueError saying why the model cannot predict (any other error fails)."""
    try:
        return m.predict(lines, **options)
    except ValueError as e:
        if str(e) != m._not_predictable():
            raise
        return e


def _embedding_ops(m) -> Iterator[tuple[str, Callable[[], Any]]]:
    """Every lookup of word vectors (words, labels, unknown words, batches, the composed table, similarity,
    analogy) and, on a fastText model, sentence vectors, subwords and predict."""
    fasttext = hasattr(m, "predict")
    words = [*m.words[:3], *m.words[-2:], *getattr(m, "labels", [])[:2], "zzqx", "", "</s>", "日本語", "\udce9t"]
    for w in words:
        yield f"[{w!r}]", lambda w=w: m[w] if w in m else m.get(w)
        yield f"embedding({w!r})", lambda w=w: m.embedding(w)
        if fasttext:
            yield f"get_word_vector({w!r})", lambda w=w: m.get_word_vector(w)
        yield f"subword_indices({w!r})", lambda w=w: m.subword_indices(w)
    yield "embedding_batch", lambda: m.embedding_batch(words)
    yield "vectors", lambda: np.asarray(m.vectors).sum()
    known = [w for w in m.words[:4] if w in m]
    if known:
        yield "most_similar", lambda: m.most_similar(known[0], 3)
        yield "similarity", lambda: m.similarity(known[0], known[-1])
    if len(known) >= 3:
        yield "analogy", lambda: m.analogy(*known[:3])
        yield "doesnt_match", lambda: m.doesnt_match(known)
    if fasttext:
        yield "sentence_vectors", lambda: m.sentence_vectors(["a b c", "", " ".join(words[:4]), "caf\udce9 x"])
        if m.labels or int(m.args.model) == 3:
            lines = [" ".join(words[:3]), "", "zzqx " + " ".join(m.labels[:1]), "caf\udce9 " + words[0]]
            yield "predict(line)", lambda: _predicted(m, lines[0], k=2)
            yield "predict(lines)", lambda: _predicted(m, lines, k=-1, threshold=0.1)
            yield "predict(threshold=-1)", lambda: _predicted(m, lines[-1], k=1, threshold=-1.0)


def _tensor_ops(m) -> Iterator[tuple[str, Callable[[], Any]]]:
    """safetensors (one file or shards): every tensor as stored and as float32, the metadata, check()."""
    for name in list(m.keys())[:16]:
        yield f"[{name!r}]", lambda name=name: np.asarray(m[name]).tobytes()
        yield f"to_numpy({name!r})", lambda name=name: m.to_numpy(name)
    yield "metadata, check", lambda: (dict(m.metadata or {}), m.check())


def _gguf_ops(m) -> Iterator[tuple[str, Callable[[], Any]]]:
    def values() -> None:
        for key in m.metadata:
            value = m.metadata[key]
            if hasattr(value, "tolist"):
                value.tolist()

    def to_sentencepiece() -> Any:  # written, or refused saying why
        try:
            return wv.sentencepiece.from_gguf(m, warn=False).check()
        except ValueError as e:
            assert str(e).startswith(("tokenizer.ggml.", "the GGUF", "sentencepiece cannot load")), repr(e)

    yield "metadata values", values
    for name, tensor in list(m.tensors.items())[:16]:
        yield f"to_numpy({name!r})", lambda tensor=tensor: tensor.to_numpy().astype(np.float64)
    yield "check", m.check
    yield "to SentencePiece", to_sentencepiece


def _rwkv_ops(m) -> Iterator[tuple[str, Callable[[], Any]]]:
    for name, tensor in list(m.tensors.items())[:16]:
        yield f"to_numpy({name!r})", lambda tensor=tensor: tensor.to_numpy().astype(np.float64)
    yield "check", m.check


def _sentencepiece_ops(m) -> Iterator[tuple[str, Callable[[], Any]]]:
    yield "pieces", lambda: m.pieces
    pieces = m.pieces
    if pieces:
        yield "piece(0), piece(-1)", lambda: (m.piece(0), m.piece(len(pieces) - 1))
        yield "piece_to_id", lambda: m.piece_to_id(pieces[-1][0])
    yield "specs", lambda: (repr(m.trainer_spec), repr(m.normalizer_spec), repr(m.denormalizer_spec),
                            repr(m.self_test_data))
    yield "charsmap", lambda: m.charsmap and (m.charsmap.mapping, m.charsmap.replacements)
    yield "check", m.check


def _infinigram_ops(m) -> Iterator[tuple[str, Callable[[], Any]]]:
    top = (1 << 8 * m.token_width) - 1
    for q in ([116], [116, 104, 101], [], [top], [0, top, 0]):
        yield f"count({q})", lambda q=q: m.count(q)
    yield "find", lambda: m.find([116, 104])
    yield "prob", lambda: m.prob([116], 104)
    yield "ntd", lambda: m.ntd([116])
    yield "infgram_prob", lambda: m.infgram_prob([32, 116], 104)
    yield "infgram_ntd", lambda: m.infgram_ntd([116])
    if m.doc_cnt:
        yield "documents", lambda: (m.get_doc_by_ix(0), m.get_doc_by_ix(m.doc_cnt - 1))
    if m.tok_cnt:
        yield "get_doc_by_rank", lambda: m.get_doc_by_rank(0, 0)


def _npy_ops(m) -> Iterator[tuple[str, Callable[[], Any]]]:
    yield "tobytes", lambda: np.asarray(m).tobytes()


def _npz_ops(m) -> Iterator[tuple[str, Callable[[], Any]]]:
    for name in list(m.keys())[:16]:
        yield f"[{name!r}]", lambda name=name: np.asarray(m[name]).tobytes()


def _model_ops(model: Any) -> Iterator[tuple[str, Callable[[], Any]]]:
    from wvformats.embeddings import Embeddings

    name = type(model).__name__
    if isinstance(model, Embeddings):
        return _embedding_ops(model)
    if isinstance(model, np.ndarray):
        return _npy_ops(model)
    ops = {"SafeTensors": _tensor_ops, "ShardedSafeTensors": _tensor_ops, "GGUFModel": _gguf_ops,
           "RwkvModel": _rwkv_ops, "SentencePieceModel": _sentencepiece_ops, "InfiniGramIndex": _infinigram_ops,
           "NpzArrays": _npz_ops}
    return ops[name](model)


def plan(path: Path, fmt: str, out: Path, case: int) -> Callable[[dict], Iterator[tuple[str, Callable]]]:
    """The calls made on one input, in order: sniff, read, validate, inspect, dump, convert, then what the model
    read offers (each call checked by :func:`_checked`)."""
    mine = (fmt,)

    def calls(state: dict) -> Iterator[tuple[str, Callable]]:
        yield "sniff", _checked((), lambda: wv.sniff(path))

        def read(**options: Any) -> Any:
            got = wv.read(path, fmt, **options)
            state["model"] = got
            return got

        yield "read", _checked(mine, read)
        if case % 4 == 0:
            yield "read(mmap=False)", _checked(mine, lambda: read(mmap=False))
        if fmt == "fasttext":
            yield "read(unicode_errors='replace')", _checked(mine, lambda: read(unicode_errors="replace"))
        yield "validate", _checked(mine, lambda: wv.validate(path, fmt))
        yield "inspect", _checked(mine, lambda: wv.inspect(path, fmt))
        yield "inspect(full=True)", _checked(mine, lambda: wv.inspect(path, fmt, full=True))
        if wv.registry.get(fmt).schema is not None:
            yield "dump", _checked(mine, lambda: _dump(path, fmt))
        targets = wv.api.convert_targets(wv.registry.get(fmt))
        if targets:
            to = targets[case % len(targets)]
            ext = (wv.registry.get(to).extensions or ("",))[0]

            def convert() -> str:
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                return wv.convert(path, out / f"converted{ext}", to=to, from_format=fmt)

            yield f"convert to {to}", _checked((fmt, to), convert)
        model = state.get("model")
        if model is not None and not isinstance(model, FormatError):
            for name, op in _model_ops(model):
                yield name, _checked(mine, op)

    return calls


# -- the test -------------------------------------------------------------------------------------------------

def test_the_samples_cover_every_format():
    assert {wv.sniff(p) for p in SAMPLES} == set(wv.formats())


def _warm(path: Path, fmt: str, out: Path) -> None:
    """The calls made once in this process, so that every module they import is imported before the children
    are forked (an import is no part of what a call on a mutant costs)."""
    state: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _, fn in plan(path, fmt, out, 0)(state):
            try:
                fn()
            except Exception:  # (reported by the check of the unmutated sample, in a child)
                pass


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_mutants_fail_with_our_errors_in_bounded_time_and_memory(sample, tmp_path):
    fmt = _format(sample)
    out = tmp_path / "out"
    out.mkdir()
    repros = Path(REPROS) if REPROS else tmp_path / "repros"
    _warm(sample, fmt, out)
    found: dict[tuple, list] = {}  # signature -> [first Bad, times seen, saved input]

    def check(path: Path, label: str, case: int) -> None:
        size = sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size
        for bad in run_forked(plan(path, fmt, out, case), size, BOUNDS):
            sig = signature(fmt, bad)
            if sig in found:
                found[sig][1] += 1
                continue
            n = len(list(repros.glob(f"{fmt}-*"))) if repros.exists() else 0
            saved = save_repro(repros, fmt, path, bad, label, n)
            found[sig] = [bad, 1, saved, label]

    check(sample, f"{sample.name} unmutated", 0)  # the bounds hold for the sample itself
    budget = SECONDS / len(SAMPLES)
    started = time.perf_counter()
    inputs = 1
    if sample.is_file():
        for data, what in header_numbers(sample.read_bytes()):
            (tmp_path / sample.name).write_bytes(data)
            check(tmp_path / sample.name, f"{sample.name} ({what})", 0)
            inputs += 1
    case = 0
    while case < CASES or time.perf_counter() - started < budget:
        path, what = mutant(sample, SEED, case, tmp_path)
        check(path, f"{sample.name} seed {SEED} case {case} ({what})", case)
        case += 1
        inputs += 1
    report = [f"{bad.call}: {bad.kind} at {bad.where} ({times}x): {bad.text[:300]}\n    input {saved} = {label}"
              for bad, times, saved, label in found.values()]
    if REPROS:
        with open(Path(REPROS) / "summary.txt", "a") as f:
            f.write(f"{sample.name} [{fmt}] seed {SEED}: {inputs} inputs, {len(found)} bad signatures\n")
            f.writelines(f"  {line}\n" for line in report)
    assert not found, f"{sample.name}: {len(found)} bad signature(s) in {inputs} inputs:\n" + "\n".join(report)


def test_the_bounds_catch_time_memory_and_crashes():
    """The forked runner reports a call over its CPU time, one beyond its address space, a crash, a refusal in
    words not ours and a foreign exception, and passes one that works."""
    import ctypes

    def spin() -> None:
        while True:
            pass

    def crash() -> None:
        ctypes.string_at(0)

    def foreign() -> None:
        raise IndexError("list index out of range")

    calls = [("works", lambda: 1), ("foreign", foreign), ("words", _checked((), lambda: (_ for _ in ()).throw(
        FormatError("unchecked input: ValueError: x", format="npy")))), ("memory", lambda: bytearray(200 << 20))]
    got = run_forked(lambda state: iter(calls), 1000, Bounds(seconds=1))
    assert [(b.call, b.kind) for b in got] == [("foreign", "IndexError"), ("words", "refusal"), ("memory", "memory")]
    assert run_forked(lambda state: iter([("spin", spin)]), 1000, Bounds(seconds=0.5))[0][:2] == ("spin", "time")
    assert run_forked(lambda state: iter([("crash", crash)]), 1000, Bounds(seconds=1))[0][:2] == ("crash", "crash")
    assert run_forked(lambda state: iter([("works", lambda: bytearray(1 << 20))]), 1000, Bounds(seconds=1)) == []
    assert isinstance(got[0], Bad)
