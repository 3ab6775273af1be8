"""The ``wvformats`` command: a thin layer over the public API.

Exit codes: 0 ok, 1 a check failed, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import textwrap
import threading
import traceback
import warnings
from pathlib import Path
from typing import Any

from . import api, registry
from .commands import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    LONG,
    header_size_argument,
    index_arguments,
    print_json,
    read_options,
    shown,
    unicode_argument,
)
from .errors import FormatError, OptionError

EXIT_INTERRUPTED, EXIT_PIPE, EXIT_TERMINATED = 130, 141, 143  # 128 + SIGINT, SIGPIPE, SIGTERM, as a shell says

DESCRIPTION = """\
Read, check, convert and document the binary formats of the word-embedding and language-model world.
Every format is one declarative construct schema; the parser, builder, round-trip check, dump and docs
all come from it. `wvformats COMMAND --help` says more about each command.
"""

EPILOG = """\
exit codes: 0 ok, 1 a check failed, 2 usage or input error, 130 interrupted (Ctrl-C), 141 output closed
(| head), 143 terminated; no temporary file is left behind in any case
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="wvformats", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=_Formatter)
    from . import __version__

    p.add_argument("--version", action="version", version=f"wvformats {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    # the same two options also after a command (``wvformats validate f --debug``)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    common.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS, help="no progress bars")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def command(group: Any, name: str, **kw: Any) -> argparse.ArgumentParser:
        kw["description"] = textwrap.fill(kw.get("description") or kw.get("help") or "", 100)
        return group.add_parser(name, parents=[common], formatter_class=_Formatter, **kw)

    command(sub, "formats", help="what each format can do: write, validate, convert to, look up"
            ).add_argument("--json", action="store_true", help="the table as a JSON list, one object per format")
    s = command(sub, "sniff", help="tell the format of files from their content")
    s.add_argument("files", nargs="+", type=Path, help="files or index folders")
    s.add_argument("--json", action="store_true", help="a JSON list of {path, format} (and error)")
    s = command(sub, "inspect", help="summary from the header and a sample (--full: the whole file)")
    s.add_argument("file", type=Path, help="a file, or an index folder")
    s.add_argument("--format", "-f", help="the format to read the input as (default: sniffed from its content; `wvformats formats` lists them)")
    s.add_argument("--full", action="store_true",
                   help="parse the whole file: exact counts, statistics, offsets of the parts (default: the "
                        "header and a sample, in bounded time and memory)")
    index_arguments(s)
    unicode_argument(s)
    header_size_argument(s)
    s.add_argument("--all", action="store_true", help="every item of long lists (default: the first 16 and how "
                                                      "many in all, as `gguf dump`)")
    s.add_argument("--json", action="store_true", help="the summary as a JSON object (every list whole)")
    s = command(sub, "dump", help="annotated hex dump")
    s.add_argument("file", type=Path, help="the file whose fields are shown with their bytes")
    s.add_argument("--format", "-f", help="the format to read the input as (default: sniffed from its content; `wvformats formats` lists them)")
    s.add_argument("--bytes", type=int, default=32, help="bytes shown per field (default 32)")
    s.add_argument("--all", action="store_true", help="every element of long arrays (default: first and last 4)")
    s = command(sub, "validate", help="byte-exact round trip of files")
    s.add_argument("files", nargs="+", type=Path, help="files or index folders")
    s.add_argument("--format", "-f", help="the format to read the input as (default: sniffed from its content; `wvformats formats` lists them)")
    s.add_argument("--full", action="store_true", help="index folders: check the whole suffix order")
    index_arguments(s)
    unicode_argument(s)
    header_size_argument(s)
    s.add_argument("--json", action="store_true", help="a JSON list of reports (ok, field, offset, message)")
    s = command(sub, "convert", help="convert between formats")
    s.add_argument("src", type=Path, help="the file to read")
    s.add_argument("dst", type=Path, help="the file to write (atomically: a temporary file, then renamed); "
                                            "- writes to standard output (with --to)")
    s.add_argument("--from", dest="from_format", help="input format (default: sniffed)")
    s.add_argument("--to", metavar="FORMAT", help="output format, one of: {writable} (default: from the "
                                                  "extension of DST)")
    s.add_argument("--force", action="store_true", help="replace DST if it exists")
    s.add_argument("--limit", type=int, metavar="N", help="only the first N words (fastText: every label and n-gram "
                                                         "bucket kept, so unknown words get the vectors they had)")
    unicode_argument(s)
    s.add_argument("--to-encoding", metavar="ENC",
                   help="word2vec, GloVe, Leader and fastText output from word vectors: the encoding of the words "
                        "written (default: the one they were read in, --encoding, else UTF-8); --to-encoding utf-8 "
                        "transcodes. A fastText model's words stay in its own bytes (its n-grams hash them)")
    s.add_argument("--newline", action="store_true", help="word2vec binary: word2vec.c's \\n after vectors")
    s.add_argument("--style", choices=["repr", "fixed6", "g5", "repr16"],
                   help="text formats, how numbers are spelt: repr the shortest that reads back the same float32 "
                        "(0.12345679, as gensim writes), fixed6 six decimals (0.123457, word2vec.c's %%lf), g5 five "
                        "significant digits (0.12346, fastText's), repr16 repr as numpy before 2.3 spelt it "
                        "(1234567.0 where numpy now writes 1.234567e+06); default: repr")
    s.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=None,
                   help="finalfusion output: L2-normalise the word rows, their norms kept in an NdNorms chunk, as "
                        "finalfusion's converters do (the default for input of another format; a finalfusion "
                        "file's rows are kept as read); --no-normalize keeps every number as stored, bit for bit, "
                        "both ways: rows not normalised into finalfusion, nor multiplied by their norms out of it")
    s.add_argument("--unnormalize", action="store_true",
                   help="finalfusion to other formats: multiply the rows by their stored norms (the default when "
                        "the file has norms; with this flag, an error when it has none)")
    s.add_argument("--dedupe", action="store_true",
                   help="output of any format that holds words: keep one row of each repeated word, the one lookups "
                        "use (the first; a fastText model's last, as fastText's); finalfusion and fastText, which "
                        "hold each word once, refuse a repeated word without it")
    s.add_argument("--upgrade", action="store_true",
                   help="fastText output: write a model of an older release (no magic, or version 11), which "
                        "today's fastText refuses or reads otherwise, as version 12 that it loads, with the same "
                        "lookups and predictions (default: written as it was read, byte for byte)")
    s.add_argument("--type", dest="tensor_type", metavar="GGML_TYPE",
                   help="GGUF output from safetensors: the ggml type (Q8_0, Q4_0, F16, ...) of the float tensors "
                        "of 2+ dimensions whose rows fill its blocks, by ggml's quantizers (default: kept as stored); "
                        "a warning line names the matrices whose rows do not, and none that can take it is an error")
    s.add_argument("--shard-size", metavar="SIZE",
                   help="sharded safetensors output (DST a *.safetensors.index.json): the most tensor bytes in a "
                        "shard (5GB, 500MB, 2GiB, as huggingface_hub reads them); without it a sharded source keeps its "
                        "own shards and index, anything else is split at 5GB")
    for name, words, what, more in (
            ("similar", ["word"], "the words nearest to WORD (to the mean of several, minus the --negative ones) "
             "in an embedding file", "by cosine similarity"),
            ("analogy", ["a", "b", "c"], "A is to B as C is to ...: the words nearest to B - A + C (gensim's "
             "most_similar(positive=[B, C], negative=[A]); `fasttext analogies` reads A B C as fastText does, "
             "A - B + C)", "by cosine similarity of the unit vectors, A, B and C left out")):
        s = command(sub, name, help=what, description=f"{what}, {more} (gensim's most_similar ranking). A word "
                    "the file lacks is composed from its subwords where the file has them (finalfusion). Prints a "
                    "line per word found: the word, a tab, its similarity.")
        s.add_argument("file", type=Path, help="an embedding file of any format")
        if name == "similar":
            s.add_argument("word", metavar="WORD", nargs="+", help="the query words (their unit vectors' mean)")
            s.add_argument("--negative", "-n", metavar="WORD", action="append", default=[],
                           help="a word whose unit vector is subtracted (repeat for more): gensim's "
                                "most_similar(positive=WORDS, negative=...)")
        else:
            for w in words:
                s.add_argument(w, metavar=w.upper(), help=f"the word {w.upper()}")
        s.add_argument("-k", "--limit", type=int, default=10, help="how many words (default 10)")
        s.add_argument("--format", "-f", help="the format to read the input as (default: sniffed from its content; `wvformats formats` lists them)")
        s.add_argument("--json", action="store_true", help="the query and its results as a JSON object")
    s = command(sub, "docs", help="write Markdown pages generated from the schemas")
    s.add_argument("outdir", type=Path, help="the folder to write <format>.md into")
    s = command(sub, "samples", help="the main job: every bundled sample sniffed, inspected, validated and converted, and a timed read of a generated 400k x 100 GloVe file")
    s.add_argument("--json", action="store_true", help="the table as a JSON list of rows")
    s.add_argument("--words", type=int, default=400_000,
                   help="words of the generated GloVe file (x 100) whose read is timed (default 400000, 0: none)")
    for c in _family_commands()[0]:  # the families' and plugins' own commands, after the core ones
        c.arguments(command(sub, c.name, help=c.help, description=c.description), command)
    return p


def _family_commands() -> tuple[list[Any], dict[str, str]]:
    """The commands the families and the installed plugins add (wvformats.commands), found once."""
    global _FOUND
    if _FOUND is None:
        from . import commands

        _FOUND = commands.discover()
    return _FOUND


_FOUND: tuple[list[Any], dict[str, str]] | None = None


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Help as written, with ``{writable}`` in an option's help replaced by the formats that can be written
    (the registry is loaded only when help is shown)."""

    def __init__(self, prog: str, **kw: Any) -> None:
        super().__init__(prog, max_help_position=32, **kw)  # (every command name fits before its help line)

    def _split_lines(self, text: str, width: int) -> list[str]:
        # never between the halves of a hyphenated name (word2vec-binary, infini-gram)
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "{writable}" in text:
            text = text.replace("{writable}", ", ".join(api.writable_formats()))
        return text


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: --help exits 0, usage errors exit 2
        return int(e.code or 0)
    if not args.command:
        parser.print_help()
        return EXIT_INPUT
    shown: set[str] = set()

    def show(message: Any, category: Any, *rest: Any, **kw: Any) -> None:
        """A warning as one line, once (a file is parsed more than once by sniff, read and validate)."""
        text = f"wvformats: warning: {message}"
        if text not in shown:
            shown.add(text)
            print(text, file=sys.stderr)

    terminate = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if terminate else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = show
            run = _COMMANDS.get(args.command) or next(c.run for c in _family_commands()[0] if c.name == args.command)
            return int(run(args) or 0)
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly, as any Unix tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (the final flush must not fail too)
        return EXIT_PIPE
    except (FormatError, FileExistsError, OSError, ValueError) as e:
        # ValueError: an argument the API refuses (a limit below 0, a token id the index cannot hold)
        if args.debug:
            traceback.print_exc()
        print(f"wvformats: error: {_sentence(e, args)}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except _Terminated:
        return EXIT_TERMINATED  # killed (SIGTERM): the atomic writers have removed their temporary files on the way out
    finally:
        if terminate:
            signal.signal(signal.SIGTERM, previous)


def _sentence(e: Exception, args: argparse.Namespace | None = None) -> str:
    """An error as one line: a system error as ``PATH: what went wrong`` (no errno number, no temporary name);
    a FormatError or OptionError as ``FILE: ...``, FILE the file the API was reading or writing (else, for a
    FormatError raised later by a model, the command's one input file)."""
    if isinstance(e, OSError) and not isinstance(e, FormatError) and e.strerror:
        name = e.filename2 if e.filename2 is not None else e.filename
        return f"{name}: {e.strerror}" if name is not None else e.strerror
    text = str(api.hinted(e) if isinstance(e, FormatError) else e)
    name = getattr(e, "file", None)  # (a FormatError's or an OptionError's)
    if name is None and isinstance(e, FormatError):
        inputs = [v for k in ("file", "src", "model", "index") if isinstance(v := getattr(args, k, None), Path)]
        name = str(inputs[0]) if len(inputs) == 1 else None
    return f"{name}: {text}" if name and not text.startswith(name) else text


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every ``finally`` and cleanup runs as for Ctrl-C."""


def _terminated(signum: int, frame: Any) -> None:
    raise _Terminated


def cmd_formats(args: argparse.Namespace) -> int:
    from .embeddings import Embeddings

    fmts = registry.load()
    writable = set(api.writable_formats())
    rows = []
    for n in sorted(fmts):
        f = fmts[n]
        lookups = f.lookups or ("similar, analogy" if isinstance(f.model, type) and issubclass(f.model, Embeddings)
                                else "")
        rows.append({"name": n, "extensions": list(f.extensions), "read": True, "write": n in writable,
                     "validate": "consistency" if f.is_directory else "byte-exact",
                     "convert_to": [t for t in api.convert_targets(f) if t != n], "lookups": lookups,
                     "description": f.description})
    if args.json:
        print_json(rows)
    else:
        head = ("format", "extensions", "write", "validate", "convert to", "lookups")
        table = [head] + [(r["name"], " ".join(r["extensions"]), "yes" if r["write"] else
                           (fmts[r["name"]].built_by or "no"), r["validate"],
                           ", ".join(r["convert_to"]) or "-", r["lookups"] or "-") for r in rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(head) - 1)]
        for row in table:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1])
        print("every format reads; convert to: the formats its model can be written as")
    for name, error in {**registry.LOAD_ERRORS, **_family_commands()[1]}.items():  # a codec, plugin or command
        # module that did not import
        print(f"wvformats: not loaded: {name}: {error}", file=sys.stderr)
    return EXIT_OK


def cmd_sniff(args: argparse.Namespace) -> int:
    results, status = [], EXIT_OK
    for f in args.files:
        try:
            results.append({"path": str(f), "format": api.sniff(f)})
        except FormatError as e:
            results.append({"path": str(f), "format": None, "error": _sentence(e)})
            status = EXIT_INPUT
    if args.json:
        print_json(results)
    else:
        for r in results:
            if r["format"]:
                print(f"{r['path']}: {r['format']}")
            else:
                print(f"wvformats: error: {r['error']}", file=sys.stderr)
    return status


def cmd_inspect(args: argparse.Namespace) -> int:
    info = api.inspect(args.file, args.format, full=args.full, **read_options(args))
    if args.json:
        print_json(info)
        return EXIT_OK
    keep = None if args.all else LONG

    def text(v: Any) -> str:  # a value as the summary prints it: long lists cut
        return shown(v, keep) if isinstance(v, (dict, list, tuple)) else str(v)

    for k, v in info.items():
        if k == "parts":
            print("parts:")
            for part in v:
                print(f"  {part['offset']:>12}  {part['size']:>12} bytes  {part['field']}")
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):  # a table: a row per line
            print(f"{k}:")
            for row in v:
                print("  " + ", ".join(f"{a}={text(b)}" for a, b in row.items()))
        else:
            print(f"{k}: {text(v)}")
    return EXIT_OK


def cmd_dump(args: argparse.Namespace) -> int:
    from .framework.walk import hexdump

    fmt, data, spans = api.walk_file(args.file, args.format)
    print(f"# {args.file} [{fmt.name}] {len(data)} bytes")
    for line in hexdump(spans, data, max_bytes=args.bytes, keep=None if args.all else 4):
        print(line)
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from . import progress

    reports = []
    for f in _progress(args.files, args, "validate"):
        bar = progress.bar(not args.quiet and args.full and f.is_dir(), desc=f"suffix order of {f.name}",
                           unit="pair", unit_scale=True)  # (a full check of a big index takes minutes)
        try:
            reports.append(api.validate(f, args.format, full=args.full, progress=bar.update,
                                        **read_options(args)))
        finally:
            bar.close()
    if args.json:
        print_json([r.to_dict() for r in reports])
    else:
        for r in reports:
            print(r)
    if any(r.unreadable for r in reports):  # missing, unreadable or of no known format: nothing was checked
        return EXIT_INPUT
    return EXIT_OK if all(r.ok for r in reports) else EXIT_FAILED


def cmd_convert(args: argparse.Namespace) -> int:
    options: dict[str, Any] = {}
    if args.limit is not None:
        options["limit"] = args.limit
    if args.unicode_errors:
        options["unicode_errors"] = args.unicode_errors
    if args.encoding:
        options["encoding"] = args.encoding
    if args.upgrade:
        options["upgrade"] = True
    if args.to_encoding:
        options["to_encoding"] = args.to_encoding
    if args.newline:
        options["newline"] = True
    if args.style:
        options["style"] = args.style
    if args.unnormalize:
        options["unnormalize"] = True
    if args.normalize is not None:
        options["normalize"] = args.normalize
    if args.dedupe:
        options["deduplicate"] = True
    if args.tensor_type:
        options["type"] = args.tensor_type
    if args.shard_size:
        options["shard_size"] = args.shard_size
    if str(args.dst) == "-":
        return _convert_to_stdout(args, options)
    bars = _ConvertBars(args)
    if bars.shown:
        options["progress"] = bars.written
    try:
        written = api.convert(args.src, args.dst, args.to, from_format=args.from_format, overwrite=args.force,
                              **options)
    finally:
        bars.close()
    print(f"wrote {args.dst} [{written}]")
    return EXIT_OK


def _convert_to_stdout(args: argparse.Namespace, options: dict[str, Any]) -> int:
    """``convert SRC - --to FORMAT``: the file written into a temporary folder (the writers seek back to patch
    lengths), then copied to standard output; nothing else is printed there."""
    import shutil
    import tempfile

    if not args.to:
        raise OptionError("convert to standard output (-) needs --to FORMAT: there is no extension to tell it")
    with tempfile.TemporaryDirectory(prefix="wvformats-") as tmp:
        out = Path(tmp) / "out"
        try:
            api.convert(args.src, out, args.to, from_format=args.from_format, **options)
        except (FormatError, OptionError) as e:
            if e.file == str(out):  # (the temporary file is no name of the user's)
                e.file = "standard output"
            raise
        with open(out, "rb") as f:
            shutil.copyfileobj(f, sys.stdout.buffer, 1 << 20)
    sys.stdout.flush()
    return EXIT_OK


def cmd_similar(args: argparse.Namespace) -> int:
    """``similar`` and ``analogy``: nearest words, from any embedding file (unknown words from subwords)."""
    from .embeddings import Embeddings

    model = api.read(args.file, args.format)
    if not isinstance(model, Embeddings):
        raise FormatError(f"{args.command} needs word embeddings: {api.what_it_is(args.file, registry.get(api.sniff(args.file)))}")
    if args.limit < 1:
        raise OptionError(f"-k must be at least 1, got {args.limit}")
    words = [*args.word, *args.negative] if args.command == "similar" else [args.a, args.b, args.c]
    for w in words:
        if model.embedding(w) is None:
            print(f"wvformats: error: {w!r} is not in {args.file}, which has no subwords to compose it from",
                  file=sys.stderr)
            return EXIT_INPUT
    found = (model.most_similar(args.word, args.negative, topn=args.limit) if args.command == "similar"
             else model.analogy(*words, limit=args.limit))
    if args.json:  # (an analogy's query in gensim's terms too: most_similar(positive=[B, C], negative=[A]))
        query = ({"query": args.word, "negative": args.negative} if args.command == "similar"
                 else {"query": words, "positive": words[1:], "negative": words[:1]})
        print_json({**query, "results": [{"word": w, "similarity": s} for w, s in found]})
    else:  # word, then similarity: the columns of gensim's pairs and of `fasttext nn` / `analogies`
        for w, sim in found:
            print(f"{w}\t{sim:.6f}")
    return EXIT_OK


def cmd_docs(args: argparse.Namespace) -> int:

    if args.outdir.exists() and not args.outdir.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder (docs writes one page per format "
                                 "into a folder)", str(args.outdir))
    for path in api.write_docs(args.outdir):
        print(path)
    return EXIT_OK


def cmd_samples(args: argparse.Namespace) -> int:
    from .samples import run_samples

    if not 0 <= args.words <= 1_000_000:
        raise OptionError(f"--words takes 0 to 1000000, not {args.words}")
    rows, ok = run_samples(args.words)
    if args.json:
        print_json(rows)
    else:
        from .samples import table

        print(table(rows))
    return EXIT_OK if ok else EXIT_FAILED


_COMMANDS = {
    "formats": cmd_formats,
    "sniff": cmd_sniff,
    "inspect": cmd_inspect,
    "dump": cmd_dump,
    "validate": cmd_validate,
    "convert": cmd_convert,
    "similar": cmd_similar,
    "analogy": cmd_similar,
    "docs": cmd_docs,
    "samples": cmd_samples,
}


def _progress(items: list[Any], args: argparse.Namespace, desc: str) -> Any:
    from . import progress

    return progress.iterate(items, not args.quiet and len(items) > 1, desc=desc, unit="file")


class _ConvertBars:
    """``convert``'s bars on stderr (silent when not a terminal or with --quiet): ``reading SRC`` with the
    file's size as its total, then ``writing DST``, the bytes written and their rate.

    The readers parse a memory map (or pyarrow a buffer) in one call, so no position is known while reading:
    that bar shows the size and the elapsed time (no percentage it cannot know), and when the first bytes are
    written (the read is over) the size over the time the read took."""

    def __init__(self, args: argparse.Namespace) -> None:
        from .progress import tqdm_class

        self._tqdm = tqdm_class(not args.quiet)
        self.shown = self._tqdm is not None
        if not self.shown:
            return
        self._dst, self._lock, self._stop = args.dst, threading.Lock(), threading.Event()
        size = args.src.stat().st_size if args.src.is_file() else None  # (an index folder: no one size)
        self._bar = self._new(f"reading {args.src}", size, "{desc}: {elapsed}" if size is None else
                              "{desc} ({total_fmt}B): {elapsed}")
        self._reading = True

        def tick() -> None:  # the elapsed time, while nothing is reported
            while not self._stop.wait(0.5):
                with self._lock:
                    self._bar.refresh()

        self._thread = threading.Thread(target=tick, daemon=True)
        self._thread.start()

    def _new(self, desc: str, total: int | None, bar_format: str | None = None) -> Any:
        return self._tqdm(desc=desc, total=total, file=sys.stderr, unit="B", unit_scale=True, bar_format=bar_format)

    def written(self, n: int) -> None:
        """The output has grown by ``n`` bytes (the writers' ``progress``)."""
        with self._lock:
            if self._reading:
                self._end_reading()
                self._bar = self._new(f"writing {self._dst}", None)
            self._bar.update(n)

    def _end_reading(self) -> None:
        self._reading = False
        if self._bar.total is not None:
            self._bar.bar_format = "{desc}: {total_fmt}B in {elapsed}, {rate_fmt}"
            self._bar.update(self._bar.total - self._bar.n)
        self._bar.close()

    def close(self) -> None:
        if not self.shown:
            return
        self._stop.set()
        with self._lock:
            if self._reading:  # (a writer that reports nothing, or a failed read: the bar is closed as it is)
                self._reading = False
            self._bar.close()


if __name__ == "__main__":
    raise SystemExit(main())
