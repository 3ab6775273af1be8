"""The fastText family's commands, as fastText's own program has them: ``wvformats fasttext predict`` (and
``--prob`` for ``predict-prob``), ``print-word-vectors``, ``print-sentence-vectors``, ``nn`` and
``analogies``, with fastText's output format. Input is read from a file or standard input (``-``) a block of
lines at a time: memory stays constant whatever its size.

``predict``, ``print-word-vectors`` and ``print-sentence-vectors`` print what fastText's program prints, byte for
byte (a line per input line, or per word). ``nn`` and ``analogies`` print each query's results under the line
fastText's interactive program shows for it, its prompt and the query (``Query word? night``, ``Query triplet
(A - B + C)? night day sun``): the query each result belongs to, and the order A B C is read in. ``--json``
prints one JSON object per query, a line each (JSON Lines)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...commands import EXIT_OK, Command, Subcommand

BLOCK = 4096  # lines predicted at once: one batch call, then printed
# the prompts of fastText's interactive `nn` and `analogies` (src/main.cc), each followed here by its query
NN_PROMPT, ANALOGIES_PROMPT = "Query word? ", "Query triplet (A - B + C)? "


def _arguments(p: argparse.ArgumentParser, subcommand: Subcommand) -> None:
    fs = p.add_subparsers(dest="fasttext_command", metavar="FASTTEXT_COMMAND", required=True)
    s = subcommand(fs, "predict", help="the most likely labels of each line (fastText's predict and predict-prob)")
    s.add_argument("model", type=Path, help="a supervised fastText model (.bin or .ftz)")
    s.add_argument("input", nargs="?", default="-", help="a text file, one example per line ('-', the default: "
                                                          "standard input)")
    s.add_argument("-k", type=int, default=1, help="labels per line (default 1; -1: every label)")
    s.add_argument("--threshold", type=float, default=0.0, help="leave out labels of lower probability (default 0)")
    s.add_argument("--prob", action="store_true", help="each label followed by its probability (predict-prob)")
    model = "a fastText model (.bin or .ftz)"
    s = subcommand(fs, "print-word-vectors", help="the vector of each word read from standard input (words "
                                                  "unknown to the model from their subwords)")
    s.add_argument("model", type=Path, help=model)
    s = subcommand(fs, "print-sentence-vectors", help="the vector of each line read from standard input")
    s.add_argument("model", type=Path, help=model)
    s = subcommand(fs, "nn", help="the nearest neighbours of words (fastText's get_nearest_neighbors), each "
                                  f"word's under a line '{NN_PROMPT}WORD' as fastText's program shows it")
    s.add_argument("model", type=Path, help=model)
    s.add_argument("words", nargs="*", help="the query words (default: read from standard input)")
    s.add_argument("-k", type=int, default=10, help="neighbours per word (default 10)")
    s = subcommand(fs, "analogies", help="the words nearest to A - B + C (fastText's get_analogies; note the order: "
                                         "gensim's most_similar(positive=[B, C], negative=[A]) and `wvformats "
                                         "analogy` are B - A + C), each triplet's under a line "
                                         f"'{ANALOGIES_PROMPT}A B C' as fastText's program shows it")
    s.add_argument("model", type=Path, help=model)
    s.add_argument("words", nargs="*", metavar="A B C", help="triplets A B C (default: read from standard input)")
    s.add_argument("-k", type=int, default=10, help="words per triplet (default 10)")
    for command in fs.choices.values():
        command.add_argument("--encoding", metavar="ENC",
                             help="the encoding of the model's words, of the input and of the output, for a model "
                                  "whose words are not UTF-8 (cp852, latin-1, ...): the bytes fastText reads and "
                                  "prints (default UTF-8)")
        command.add_argument("--json", action="store_true",
                             help="one JSON object per query (a line of input, a word, a triplet), a line each")


def _model(path: Path, encoding: str | None) -> Any:
    from ... import api

    return api.read(path, "fasttext", mmap=True, encoding=encoding)


def _read_lines(name: str, encoding: str | None) -> Iterator[str]:
    """The lines of a file or of standard input, each without its ``\\n`` (a ``\\r`` is whitespace to fastText,
    so it stays), read lazily, in ``encoding`` (None: UTF-8); bytes it does not decode as surrogate escapes, as
    the model keeps such words."""
    stream = sys.stdin.buffer if name == "-" else open(name, "rb")  # noqa: SIM115 - closed below
    try:
        for raw in stream:
            yield raw.rstrip(b"\n").decode(encoding or "utf-8", "surrogateescape")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _blocks(lines: Iterator[str], n: int = BLOCK) -> Iterator[list[str]]:
    block: list[str] = []
    for line in lines:
        block.append(line)
        if len(block) == n:
            yield block
            block = []
    if block:
        yield block


def _words(lines: Iterator[str]) -> Iterator[str]:
    """Whitespace-separated words, as ``std::cin >> word`` reads them."""
    for line in lines:
        yield from line.split()


def _vector(v: Any) -> str:
    """A vector as fastText's ``operator<<`` prints it: ``%.5g`` values, each followed by a space."""
    return "".join(f"{float(x):.5g} " for x in v.tolist())


def _run(args: argparse.Namespace) -> int:
    from ...schemas.fasttext import Model
    from . import neighbors
    from .model import examples

    model = _model(args.model, args.encoding)
    encoding = model.encoding or "utf-8"

    def _out(text: str) -> None:
        sys.stdout.buffer.write(text.encode(encoding, "surrogateescape"))

    def _lines(name: str) -> Iterator[str]:
        return _read_lines(name, model.encoding)

    def _results(query: str | list[str], found: list[tuple[float, str]]) -> None:
        """One query of ``nn`` or ``analogies``: its prompt line, then a ``word similarity`` line per result
        (fastText's printPredictions), or its JSON object."""
        if args.json:
            said = {"query": query} if isinstance(query, str) else {
                "query": query, "expression": "{} - {} + {}".format(*query)}
            _json([{**said, "results": [{"word": w, "similarity": float(s)} for s, w in found]}])
        else:
            head = f"{NN_PROMPT}{query}" if isinstance(query, str) else f"{ANALOGIES_PROMPT}{' '.join(query)}"
            _out(head + "\n" + "".join(f"{word} {sim:g}\n" for sim, word in found))

    def _json(objects: Iterator[dict[str, Any]]) -> None:
        _out("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects))

    if args.fasttext_command == "predict":
        from ...errors import OptionError

        if args.k == 0 or args.k < -1:
            raise OptionError(f"-k takes a number of labels >= 1, or -1 for every label, not {args.k}")
        for block in _blocks(examples(_lines(args.input))):
            labels, probs = model.predict(block, k=args.k, threshold=args.threshold)
            if args.json:
                _json({"text": t, "labels": list(ls), "probabilities": [float(p) for p in ps]}
                      for t, ls, ps in zip(block, labels, probs, strict=True))
                continue
            out = []
            for ls, ps in zip(labels, probs, strict=True):
                out.append(" ".join(f"{lab} {float(p):g}" if args.prob else lab
                                    for lab, p in zip(ls, ps.tolist() if hasattr(ps, "tolist") else ps,
                                                      strict=True)))
            _out("\n".join(out) + "\n")
    elif args.fasttext_command == "print-word-vectors":
        for block in _blocks(_words(_lines("-"))):
            vectors = model.word_vectors(block)
            if args.json:
                _json({"word": w, "vector": v.tolist()} for w, v in zip(block, vectors, strict=True))
                continue
            _out("".join(f"{w} {_vector(v)}\n" for w, v in zip(block, vectors, strict=True)))
    elif args.fasttext_command == "print-sentence-vectors":
        supervised = int(model.args["model"]) == Model.supervised  # (the others read each line whole)
        for block in _blocks(examples(_lines("-")) if supervised else _lines("-")):
            vectors = model.sentence_vectors(block)
            if args.json:
                _json({"text": t, "vector": v.tolist()} for t, v in zip(block, vectors, strict=True))
            else:
                _out("".join(f"{_vector(v)}\n" for v in vectors))
    else:
        words = list(args.words) or list(_words(_lines("-")))
        if args.fasttext_command == "nn":
            for w in words:
                _results(w, neighbors.nearest_neighbors(model, w, args.k))
        else:
            from ...errors import OptionError

            if len(words) % 3:
                raise OptionError(f"analogies takes triplets A B C: {len(words)} words is not a multiple of 3")
            if args.k < 1:
                raise OptionError(f"-k needs to be 1 or higher, not {args.k}")
            for i in range(0, len(words), 3):
                triplet = words[i : i + 3]
                _results(triplet, neighbors.analogies(model, *triplet, k=args.k))
    sys.stdout.flush()
    return EXIT_OK


COMMANDS = (Command("fasttext", "fastText's own commands: predict, print-word-vectors, print-sentence-vectors, nn, "
                    "analogies", _arguments, _run),)
