"""Mutation fuzzing over every registered format's bundled samples: read, validate and inspect of each mutated
file either work or fail with the library's own error, naming the format, in words of ours (never numpy's,
construct's or Python's), within a bounded time and memory. fastText models are also dumped, and every
lookup and prediction of those that read is made (``test_fasttext_mutants_...``).

Seeded and deterministic: the header numbers swept, then CASES random mutants per sample in CI (a few
seconds in all). A longer campaign runs for
a number of seconds in all, spread over the samples, from a seed of your choice:

    WVFORMATS_FUZZ_SECONDS=600 WVFORMATS_FUZZ_SEED=1 python -m pytest tests/test_fuzz.py -q -x

A failure names the sample, seed, case and mutations; ``mutant(sample, seed, case)`` rebuilds that input.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import tracemalloc
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

import wvformats as wv
from wvformats.errors import FormatError
from wvformats.samples import sample_files
from wvformats.testing.fuzz import Limits, header_numbers, mutate_some, ours, run_bounded

SAMPLES = sample_files()
CASES = 24  # mutants per sample in CI (about 3 s in all)
SECONDS = float(os.environ.get("WVFORMATS_FUZZ_SECONDS") or 0)  # a longer run: seconds in all
SEED = int(os.environ.get("WVFORMATS_FUZZ_SEED") or 0)
TIME_LIMIT = 10.0  # seconds one call may take on a mutant of a sample of at most 15 kB (they take ms)
MEMORY_LIMIT = 32 << 20  # bytes one call may allocate at its peak (numpy's allocations are traced too)

def mutant(sample: Path, seed: int, case: int, out: Path) -> tuple[Path, str]:
    """Write mutant ``case`` of ``sample`` (a file, or a folder one of whose files is mutated) under ``out``."""
    rng = np.random.default_rng([seed, zlib.crc32(sample.name.encode()), case])
    target = out / sample.name
    if target.is_dir():
        shutil.rmtree(target)
    if sample.is_dir():
        shutil.copytree(sample, target)
        files = sorted(p.name for p in sample.iterdir())
        victim = target / files[int(rng.integers(0, len(files)))]
    else:
        victim = target
        shutil.copyfile(sample, target)
    data, done = mutate_some(victim.read_bytes(), rng)
    victim.write_bytes(data)
    return target, (f"{victim.name}: " if sample.is_dir() else "") + done


def _call(label: str, fn):
    """``fn()``'s result or the FormatError it raised, within TIME_LIMIT and MEMORY_LIMIT."""
    return run_bounded(label, fn, Limits(TIME_LIMIT, MEMORY_LIMIT))


def _dump(path: Path, fmt: str) -> None:
    """What ``wvformats dump`` prints: every field's span walked, the hex lines made."""
    from wvformats.fileio import open_buffer
    from wvformats.framework.walk import hexdump, walk

    data = open_buffer(path)
    _, spans = walk(wv.registry.get(fmt).schema, data, format=fmt)
    for _ in hexdump(spans, data, max_bytes=16, keep=4):
        pass


def _touch_gguf(path: Path) -> None:
    """Every metadata value decoded (string arrays in full), every tensor dequantized and copied, check()."""
    model = wv.read(path, "gguf")
    for key in model.metadata:
        value = model.metadata[key]
        if hasattr(value, "tolist"):
            value.tolist()
    for tensor in model.tensors.values():
        tensor.to_numpy().astype(np.float64)
    model.check()
    try:  # its SentencePiece vocabulary as a tokenizer.model: written, or refused saying why
        wv.sentencepiece.from_gguf(model, warn=False).check()
    except ValueError as e:
        assert str(e).startswith(("tokenizer.ggml.", "the GGUF", "sentencepiece cannot load")), repr(e)


def _touch_rwkv(path: Path) -> None:
    """Every tensor dequantized and copied, check()."""
    model = wv.read(path, "rwkv")
    for tensor in model.tensors.values():
        tensor.to_numpy().astype(np.float64)
    model.check()


# what is done with a model beyond read, validate and inspect: (name, call) per format
MODEL_CALLS = {
    "gguf": [("dump", lambda p: _dump(p, "gguf")), ("to_numpy, metadata values, check, to SentencePiece",
                                                     _touch_gguf)],
    "rwkv": [("dump", lambda p: _dump(p, "rwkv")), ("to_numpy, check", _touch_rwkv)],
}


def check_mutant(path: Path, fmt: str, label: str, *, in_memory: bool = False) -> None:
    """read, validate and inspect ``path`` as ``fmt`` (and what MODEL_CALLS names for it): each works or fails
    with our error for ``fmt``."""
    calls = [("read", lambda: wv.read(path, fmt)), ("validate", lambda: wv.validate(path, fmt)),
             ("inspect", lambda: wv.inspect(path, fmt))]
    if in_memory:
        calls.append(("read(mmap=False)", lambda: wv.read(path, fmt, mmap=False)))
    calls += [(name, lambda call=call: call(path)) for name, call in MODEL_CALLS.get(fmt, [])]
    for name, fn in calls:
        where = f"{label}: {name}"
        got = _call(where, fn)
        if isinstance(got, FormatError):
            assert got.format == fmt, f"{where}: {got!r} does not name {fmt}"
            ours(where, str(got))
        elif isinstance(got, wv.ValidationReport):
            assert got.format == fmt
            if got.error:
                assert got.error.startswith(fmt), f"{where}: {got.error}"
            for text in [got.error or "", *got.problems]:
                ours(where, text)


def test_the_samples_cover_every_format():
    assert {wv.sniff(p) for p in SAMPLES} == set(wv.formats())


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_mutants_fail_with_our_errors_in_bounded_time_and_memory(sample, tmp_path):
    fmt = wv.sniff(sample)
    check_mutant(sample, fmt, f"{sample.name} unmutated")  # the bounds hold for the sample itself
    budget = SECONDS / (len(SAMPLES) + len(FASTTEXT_SAMPLES))
    started = time.perf_counter()
    with _bounded():
        if sample.is_file():
            for data, what in header_numbers(sample.read_bytes()):
                (tmp_path / sample.name).write_bytes(data)
                check_mutant(tmp_path / sample.name, fmt, f"{sample.name} ({what})")
        case = 0
        while case < CASES or time.perf_counter() - started < budget:
            path, what = mutant(sample, SEED, case, tmp_path)
            check_mutant(path, fmt, f"{sample.name} seed {SEED} case {case} ({what})", in_memory=case % 4 == 0)
            case += 1


@contextlib.contextmanager
def _bounded():
    """Calls timed by SIGALRM and their memory traced (see _call); warnings ignored (doubtful fields and
    duplicate words warn; they are no failures)."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if not tracing:
            tracemalloc.stop()


# -- fastText: the model's own operations on mutants (issue 27) ------------------------------------------------

_FASTTEXT_DATA = Path(__file__).parent / "data" / "fasttext"
# the bundled sample (pruned, quantized, softmax) and, from the family's test data, a skipgram model with
# character n-grams, an older release of cp852 words, and a supervised model with the hs loss (its tree)
FASTTEXT_SAMPLES = [p for p in SAMPLES if p.name == "sample-supervised.ftz"] + [
    _FASTTEXT_DATA / "toy-model.bin", _FASTTEXT_DATA / "cp852_fasttext.bin", _FASTTEXT_DATA / "trained" / "sup-hs.bin"]


def _dump(path: Path, fmt: str) -> int:
    """What ``wvformats dump`` does: the schema walked over the file's bytes, and its hex dump."""
    from wvformats.fileio import open_buffer
    from wvformats.framework.walk import hexdump, walk

    data = open_buffer(path)
    _, spans = walk(wv.registry.get(fmt).schema, data, format=fmt)
    return sum(1 for _ in hexdump(spans, data, max_bytes=64, keep=4))


def _fasttext_operations(m) -> list[tuple[str, object]]:
    """Every lookup of a fastText model (words, labels, unknown words, batches, the composed table,
    similarity, sentence vectors) and, on a supervised model, predict of a line and of lines."""
    words = [*m.words[:3], *m.words[-2:], *m.labels[:2], "zzqx", "", "</s>", "日本語", "\udce9t"]
    ops: list[tuple[str, object]] = []
    for w in words:
        ops += [(f"[{w!r}]", lambda w=w: m[w] if w in m else m.get(w)), (f"embedding({w!r})", lambda w=w: m.embedding(w)),
                (f"get_word_vector({w!r})", lambda w=w: m.get_word_vector(w)),
                (f"subword_indices({w!r})", lambda w=w: m.subword_indices(w))]
    ops += [("embedding_batch", lambda: m.embedding_batch(words)), ("vectors", lambda: np.asarray(m.vectors).sum()),
            ("sentence_vectors", lambda: m.sentence_vectors(["a b c", "", " ".join(words[:4])]))]
    if m.words:
        ops.append(("most_similar", lambda: m.most_similar(m.words[0], 3)))
    if m.labels or int(m.args.model) == 3:
        lines = [" ".join(words[:3]), "", "zzqx " + " ".join(m.labels[:1])]
        ops += [("predict(line)", lambda: _predicted(m, lines[0], k=2)),
                ("predict(lines)", lambda: _predicted(m, lines, k=-1, threshold=0.1))]
    return ops


def _predicted(m, lines, **options):
    """``m.predict``, or the ValueError saying why the model cannot predict (returned: any other error fails)."""
    try:
        return m.predict(lines, **options)
    except ValueError as e:
        if str(e) != m._not_predictable():
            raise
        return e


def check_fasttext_mutant(path: Path, label: str, in_memory: bool) -> None:
    """read, validate, inspect and dump as for every format; then, when the mutant reads, every lookup and
    prediction works or fails with our FormatError, or (predict) the ValueError saying why the model cannot
    predict (``m[w]`` is asked only of a word ``w in m`` says has a vector)."""
    check_mutant(path, "fasttext", label, in_memory=in_memory)
    got = _call(f"{label}: dump", lambda: _dump(path, "fasttext"))
    if isinstance(got, FormatError):
        ours(f"{label}: dump", str(got))
    for mmap in (True, False) if in_memory else (True,):
        m = _call(f"{label}: read", lambda mmap=mmap: wv.read(path, "fasttext", mmap=mmap, unicode_errors="replace"))
        if isinstance(m, FormatError):
            continue
        for name, op in _fasttext_operations(m):
            out = _call(f"{label}: {name}", op)
            if isinstance(out, FormatError):
                assert out.format == "fasttext", f"{label}: {name}: {out!r}"
                ours(f"{label}: {name}", str(out))


@pytest.mark.parametrize("sample", FASTTEXT_SAMPLES, ids=lambda p: p.name)
def test_fasttext_mutants_look_up_and_predict_or_fail_with_our_errors(sample, tmp_path):
    budget = SECONDS / (len(SAMPLES) + len(FASTTEXT_SAMPLES))  # (a longer campaign's share)
    started = time.perf_counter()
    with _bounded():
        check_fasttext_mutant(sample, f"{sample.name} unmutated", True)
        case = 0
        while case < CASES or time.perf_counter() - started < budget:
            path, what = mutant(sample, SEED, case, tmp_path)
            check_fasttext_mutant(path, f"{sample.name} seed {SEED} case {case} ({what})", case % 4 == 0)
            case += 1
