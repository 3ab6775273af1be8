"""The ``wvformats`` command: a thin layer over the public API.

Exit codes: 0 ok, 1 a check failed, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
import warnings
from pathlib import Path
from typing import Any

from . import api, registry
from .errors import FormatError, OptionError

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2

DESCRIPTION = """\
Read, check, convert and document the binary formats of the word-embedding and language-model world.
Every format is one declarative construct schema; the parser, builder, round-trip check, dump and docs
all come from it.

commands:
  formats                    list the registered formats
  sniff FILE...              tell the format of each file from its content
  inspect FILE [--json]      structure summary: counts, shapes, dtypes, sizes, offsets of the parts
  dump FILE                  hex dump annotated with field paths (bulk arrays elided)
  validate FILE... [--json]  parse, rebuild, compare bytes: exit 1 unless every file is byte-identical
  convert SRC DST            convert between formats (atomic; never overwrites without --force)
  rwkv quantize IN OUT --type T   re-quantize an rwkv.cpp model with rwkv.cpp's rules
  sentencepiece export MODEL OUT --to hf|tsv|json   vocabulary export (hf: a tokenizer.json)
  infinigram build DATA OUT  index a folder of JSONL files as the real infini-gram indexer does
  infinigram count INDEX IDS...   occurrences of a token sequence (or --text [--tokenizer T])
  docs OUTDIR                write one Markdown page per format, generated from the schemas
  samples [--json]           run sniff, inspect, validate and a conversion on the bundled samples,
                             and time the read of a generated 400k x 100 GloVe file ([--words N])

exit codes: 0 ok, 1 a check failed, 2 usage or input error
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="wvformats", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    # the same two options also after a command (``wvformats validate f --debug``)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    common.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS, help="no progress bars")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def command(group: Any, name: str, **kw: Any) -> argparse.ArgumentParser:
        return group.add_parser(name, parents=[common], **kw)

    command(sub, "formats", help="list the registered formats").add_argument("--json", action="store_true")
    s = command(sub, "sniff", help="tell the format of files from their content")
    s.add_argument("files", nargs="+", type=Path)
    s.add_argument("--json", action="store_true")
    s = command(sub, "inspect", help="structure summary of a file")
    s.add_argument("file", type=Path)
    s.add_argument("--format", "-f")
    _index_arguments(s)
    s.add_argument("--json", action="store_true")
    s = command(sub, "dump", help="annotated hex dump")
    s.add_argument("file", type=Path)
    s.add_argument("--format", "-f")
    s.add_argument("--bytes", type=int, default=32, help="bytes shown per field (default 32)")
    s = command(sub, "validate", help="byte-exact round trip of files")
    s.add_argument("files", nargs="+", type=Path)
    s.add_argument("--format", "-f")
    s.add_argument("--full", action="store_true", help="index folders: check the whole suffix order")
    _index_arguments(s)
    s.add_argument("--json", action="store_true")
    s = command(sub, "convert", help="convert between formats")
    s.add_argument("src", type=Path)
    s.add_argument("dst", type=Path)
    s.add_argument("--from", dest="from_format", help="input format (default: sniffed)")
    s.add_argument("--to", help="output format (default: from the extension of DST)")
    s.add_argument("--force", action="store_true", help="replace DST if it exists")
    s.add_argument("--limit", type=int, help="only the first N words")
    s.add_argument("--unicode-errors", choices=["strict", "replace", "ignore"], default=None)
    s.add_argument("--newline", action="store_true", help="word2vec binary: word2vec.c's \\n after vectors")
    s.add_argument("--style", choices=["repr", "fixed6", "g5"], help="text formats: number style")
    s.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=None,
                   help="finalfusion output: L2-normalise the rows, their norms kept in an NdNorms chunk, as "
                        "finalfusion's converters do (default: the rows as they are, bit for bit)")
    s.add_argument("--unnormalize", action="store_true",
                   help="multiply rows by their stored norms (finalfusion to word-vector formats)")
    s.add_argument("--dedupe", action="store_true",
                   help="finalfusion output: keep the first row of each repeated word (it holds each word once)")
    s = command(sub, "rwkv", help="rwkv.cpp model tools")
    rs = s.add_subparsers(dest="rwkv_command", metavar="RWKV_COMMAND", required=True)
    q = command(rs, "quantize", help="quantize an FP32/FP16 model with rwkv.cpp's rules (--version: "
                                       "also convert 100 <-> 101; a model quantized to TYPE can change version)")
    q.add_argument("src", type=Path)
    q.add_argument("dst", type=Path)
    from .families.ggml.rwkv import QUANTIZE_TYPES

    q.add_argument("--type", required=True, choices=sorted({t for ts in QUANTIZE_TYPES.values() for t in ts}),
                   help="target type (Q4_2: version 100 only)")
    q.add_argument("--version", type=int, choices=[100, 101], help="output file version (default: the input's)")
    q.add_argument("--force", action="store_true", help="replace DST if it exists")
    s = command(sub, "sentencepiece", help="SentencePiece model tools")
    ss = s.add_subparsers(dest="sp_command", metavar="SENTENCEPIECE_COMMAND", required=True)
    e = command(ss, "export", help="export the vocabulary: hf (tokenizer.json), tsv or json")
    e.add_argument("model", type=Path)
    e.add_argument("out", type=Path)
    e.add_argument("--to", choices=["hf", "tsv", "json"], required=True)
    e.add_argument("--force", action="store_true", help="replace OUT if it exists")
    s = command(sub, "infinigram", help="infini-gram index tools")
    gs = s.add_subparsers(dest="infinigram_command", metavar="INFINIGRAM_COMMAND", required=True)
    b = command(gs, "build", help="index DATA/**/*.jsonl (the `text` field; other fields become metadata)")
    b.add_argument("data_dir", type=Path)
    b.add_argument("out_dir", type=Path)
    b.add_argument("--token-width", type=int, choices=[1, 2, 4], default=1,
                   help="bytes per token: 1 indexes raw UTF-8 bytes (default), 2/4 need --tokenizer")
    b.add_argument("--tokenizer", help="a Hugging Face tokenizer name or folder (needs transformers)")
    b.add_argument("--version", type=int, choices=[4, 5, 6], default=4,
                   help="4: suffixed files; 5: documents reversed; 6: files without suffix")
    b.add_argument("--shards", type=int, default=1)
    b.add_argument("--reverse", action="store_true", default=None, help="store documents reversed (v6)")
    b.add_argument("--no-metadata", dest="metadata", action="store_false", help="no metadata/metaoff files")
    b.add_argument("--no-unigram", dest="unigram", action="store_false", help="no unigram files")
    b.add_argument("--force", action="store_true", help="write into OUT even if it holds files")
    b.add_argument("--json", action="store_true")
    c = command(gs, "count", help="count a token sequence in an index")
    c.add_argument("index", type=Path)
    c.add_argument("ids", nargs="*", type=int, help="token ids")
    c.add_argument("--text", help="text instead of ids: tokenized with --tokenizer, or its UTF-8 bytes (u8 indexes)")
    c.add_argument("--tokenizer", help="the Hugging Face tokenizer (name or folder) the index was built with")
    _index_arguments(c)
    c.add_argument("--json", action="store_true")
    s = command(sub, "docs", help="write Markdown pages generated from the schemas")
    s.add_argument("outdir", type=Path)
    s = command(sub, "samples", help="run the main job on the bundled sample files")
    s.add_argument("--json", action="store_true")
    s.add_argument("--words", type=int, default=400_000,
                   help="words of the generated GloVe file (x 100) whose read is timed (default 400000, 0: none)")
    return p


def _index_arguments(p: argparse.ArgumentParser) -> None:
    """What no infini-gram file records: its token width (inferred when only one fits) and its version."""
    p.add_argument("--token-width", type=int, choices=[1, 2, 4],
                   help="infini-gram: bytes per token (default: inferred from the files)")
    p.add_argument("--version", type=int, choices=[4, 5, 6],
                   help="infini-gram: 4 (default), 5 (documents stored reversed) or 6")


def _index_options(args: argparse.Namespace) -> dict[str, Any]:
    return {k: v for k in ("token_width", "version") if (v := getattr(args, k, None)) is not None}


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
            return int(_COMMANDS[args.command](args) or 0)
    except (FormatError, FileExistsError, OSError, ValueError) as e:
        # ValueError: an argument the API refuses (a limit below 0, a token id the index cannot hold)
        if args.debug:
            traceback.print_exc()
        print(f"wvformats: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130
    except _Terminated:
        return 143  # killed (SIGTERM): the atomic writers have removed their temporary files on the way out
    finally:
        if terminate:
            signal.signal(signal.SIGTERM, previous)


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every ``finally`` and cleanup runs as for Ctrl-C."""


def _terminated(signum: int, frame: Any) -> None:
    raise _Terminated


def _print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False, default=_jsonable)
    sys.stdout.write("\n")


def _jsonable(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, (bytes, bytearray)):
        return o.hex()
    if isinstance(o, Path):
        return str(o)
    return str(o)


def cmd_formats(args: argparse.Namespace) -> int:
    fmts = registry.load()
    rows = [{"name": n, "extensions": list(fmts[n].extensions), "description": fmts[n].description}
            for n in sorted(fmts)]
    if args.json:
        _print_json(rows)
    else:
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            print(f"{r['name']:<{width}}  {' '.join(r['extensions']):<24}  {r['description']}")
    for name, error in registry.LOAD_ERRORS.items():  # a codec or plugin that did not import
        print(f"wvformats: not loaded: {name}: {error}", file=sys.stderr)
    return EXIT_OK


def cmd_sniff(args: argparse.Namespace) -> int:
    results, status = [], EXIT_OK
    for f in args.files:
        try:
            results.append({"path": str(f), "format": api.sniff(f)})
        except FormatError as e:
            results.append({"path": str(f), "format": None, "error": str(e)})
            status = EXIT_INPUT
    if args.json:
        _print_json(results)
    else:
        for r in results:
            if r["format"]:
                print(f"{r['path']}: {r['format']}")
            else:
                print(f"wvformats: error: {r['error']}", file=sys.stderr)
    return status


def cmd_inspect(args: argparse.Namespace) -> int:
    info = api.inspect(args.file, args.format, **_index_options(args))
    if args.json:
        _print_json(info)
        return EXIT_OK
    for k, v in info.items():
        if k == "parts":
            print("parts:")
            for part in v:
                print(f"  {part['offset']:>12}  {part['size']:>12} bytes  {part['field']}")
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):  # a table: a row per line
            print(f"{k}:")
            for row in v:
                print("  " + ", ".join(f"{a}={b}" for a, b in row.items()))
        else:
            print(f"{k}: {v}")
    return EXIT_OK


def cmd_dump(args: argparse.Namespace) -> int:
    from .fileio import open_buffer
    from .framework.walk import hexdump, walk

    fmt = api._resolve(args.file, args.format)  # refuses a path of the wrong kind, as every command does
    if fmt.schema is None:
        print(f"wvformats: error: {fmt.name} is a folder of files, not one file to dump (inspect and validate "
              "it instead)", file=sys.stderr)
        return EXIT_INPUT
    data = open_buffer(args.file)
    _, spans = walk(fmt.schema, data, format=fmt.name)
    print(f"# {args.file} [{fmt.name}] {len(data)} bytes")
    for line in hexdump(spans, data, max_bytes=args.bytes):
        print(line)
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    reports = [api.validate(f, args.format, full=args.full, **_index_options(args))
               for f in _progress(args.files, args, "validate")]
    if args.json:
        _print_json([r.to_dict() for r in reports])
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
    spinner = _Spinner(args, f"converting {args.src} -> {args.dst}")
    if spinner.bar is not None:  # bytes written so far and their rate, the elapsed time ticking meanwhile
        options["progress"] = spinner.bar.update
    try:
        written = api.convert(args.src, args.dst, args.to, from_format=args.from_format, overwrite=args.force,
                              **options)
    finally:
        spinner.close()
    print(f"wrote {args.dst} [{written}]")
    return EXIT_OK


def cmd_rwkv(args: argparse.Namespace) -> int:
    from .families.ggml.rwkv import quantize_model

    model = api.read(args.src, "rwkv")
    try:
        out = quantize_model(model, args.type, args.version)
    except ValueError as e:
        print(f"wvformats: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    if Path(args.dst).exists() and Path(args.dst).resolve() == Path(args.src).resolve():
        raise FormatError(f"refusing to write {args.dst} over its own input")
    api.write(out, args.dst, "rwkv", overwrite=args.force)
    print(f"wrote {args.dst} [rwkv {out.version}, {args.type}]")
    return EXIT_OK


def cmd_sentencepiece(args: argparse.Namespace) -> int:
    from .families.sentencepiece import model as S
    from .fileio import atomic_output, same_file

    model = api.read(args.model, "sentencepiece")
    try:
        if args.to == "hf":
            text = json.dumps(S.to_hf_tokenizer(model), ensure_ascii=False, indent=2)
        elif args.to == "json":
            text = json.dumps(S.to_json(model), ensure_ascii=False, indent=1)
        else:
            text = S.to_tsv(model)
    except ValueError as e:
        print(f"wvformats: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    if args.out.exists() and same_file(args.out, args.model):
        raise FormatError(f"refusing to write {args.out} over its own input")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as e:  # a piece that is not UTF-8 (kept as surrogate escapes when read)
        raise FormatError(f"the {args.to} export would hold bytes that are not UTF-8 (text position {e.start}); "
                          "a piece or normalizer string of the model is not valid UTF-8",
                          format="sentencepiece") from None
    with atomic_output(args.out, overwrite=args.force) as f:
        f.write(data)
    print(f"wrote {args.out} [{args.to}, {len(model)} pieces]")
    return EXIT_OK


def cmd_infinigram(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from .families.infinigram import index as infinigram

    if args.infinigram_command == "count":
        index = infinigram.open(args.index, **_index_options(args))
        ids = args.ids
        if args.text is not None:
            if ids:
                raise OptionError("give token ids or --text, not both")
            if args.tokenizer:
                ids = list(_tokenizer(args.tokenizer)(args.text))
            elif index.token_width == 1:  # a u8 index without a tokenizer holds the UTF-8 bytes of its texts
                ids = list(args.text.encode("utf-8"))
            else:  # no file of the index records its tokenizer
                raise OptionError(f"--text on an index of {index.token_width}-byte tokens needs --tokenizer "
                                  "(the one the index was built with), or give token ids")
        found = index.find(ids)
        if args.json:
            _print_json({"query": ids, **found})
        else:
            print(found["cnt"])
        return EXIT_OK
    if not args.data_dir.is_dir():
        raise FormatError(f"{args.data_dir}: not a folder of JSONL files")
    out = args.out_dir
    if out.exists() and any(out.iterdir()) and not args.force:
        raise FileExistsError(f"{out} holds files (use --force to write the index into it)")
    if args.token_width > 1 and not args.tokenizer:
        print("wvformats: error: --token-width 2 or 4 needs --tokenizer", file=sys.stderr)
        return EXIT_INPUT
    tokenize = _tokenizer(args.tokenizer) if args.tokenizer else None
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:  # build aside, then move in: nothing is left behind on failure
        infinigram.build_jsonl(args.data_dir, tmp, tokenize=tokenize, token_width=args.token_width,
                               version=args.version, shards=args.shards, metadata=args.metadata,
                               unigram=args.unigram, reverse=args.reverse, progress_bar=not args.quiet)
        out.mkdir(exist_ok=True)
        for p in sorted(tmp.iterdir()):
            if (out / p.name).is_dir():
                shutil.rmtree(out / p.name)
            os.replace(p, out / p.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    info = api.inspect(out)
    if args.json:
        _print_json(info)
    else:
        print(f"wrote {out} [infini-gram v{args.version}: {info['tokens']} tokens, {info['documents']} documents, "
              f"{info['shards']} shard(s), u{8 * args.token_width}]")
    return EXIT_OK


def _tokenizer(name: str) -> Any:
    """The ``encode`` of a Hugging Face tokenizer, loaded as the real infini-gram indexer loads it."""
    try:
        import transformers
    except ImportError:
        raise OptionError("--tokenizer needs the transformers package") from None
    return transformers.AutoTokenizer.from_pretrained(name, use_fast=False, add_bos_token=False,
                                                      add_eos_token=False).encode


def cmd_docs(args: argparse.Namespace) -> int:
    from .framework.docs import write_docs

    for path in write_docs(args.outdir):
        print(path)
    return EXIT_OK


def cmd_samples(args: argparse.Namespace) -> int:
    from .samples import run_samples

    if not 0 <= args.words <= 1_000_000:
        raise OptionError(f"--words takes 0 to 1000000, not {args.words}")
    rows, ok = run_samples(args.words)
    if args.json:
        _print_json(rows)
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
    "docs": cmd_docs,
    "rwkv": cmd_rwkv,
    "infinigram": cmd_infinigram,
    "sentencepiece": cmd_sentencepiece,
    "samples": cmd_samples,
}


def _progress(items: list[Any], args: argparse.Namespace, desc: str) -> Any:
    from . import progress

    return progress.iterate(items, not args.quiet and len(items) > 1, desc=desc, unit="file")


class _Spinner:
    """A bar on stderr for one long step: the bytes it reports to ``bar.update`` with their rate, and the
    elapsed time ticking while it reports nothing (reading); silent when not a terminal or with --quiet."""

    def __init__(self, args: argparse.Namespace, desc: str) -> None:
        from .progress import _tqdm

        self.bar = None
        tqdm = _tqdm(not args.quiet)
        if tqdm is None:
            return
        self.bar = tqdm(desc=desc, file=sys.stderr, unit="B", unit_scale=True)
        self._stop = threading.Event()

        def tick() -> None:
            while not self._stop.wait(0.5):
                self.bar.refresh()

        self._thread = threading.Thread(target=tick, daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self.bar is not None:
            self._stop.set()
            self.bar.close()


if __name__ == "__main__":
    raise SystemExit(main())
