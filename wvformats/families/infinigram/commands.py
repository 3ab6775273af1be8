"""The infini-gram family's commands: ``wvformats infinigram build`` and ``wvformats infinigram count``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ...commands import EXIT_INPUT, EXIT_OK, Command, Subcommand, index_arguments, print_json, read_options


def _arguments(p: argparse.ArgumentParser, subcommand: Subcommand) -> None:
    gs = p.add_subparsers(dest="infinigram_command", metavar="INFINIGRAM_COMMAND", required=True)
    b = subcommand(gs, "build", help="index DATA/**/*.jsonl (the `text` field; other fields become metadata)")
    b.add_argument("data_dir", type=Path, help="a folder of JSONL files (searched recursively)")
    b.add_argument("out_dir", type=Path, help="the index folder to write")
    b.add_argument("--token-width", type=int, choices=[1, 2, 4], default=1,
                   help="bytes per token: 1 indexes raw UTF-8 bytes (default), 2/4 need --tokenizer")
    b.add_argument("--tokenizer", help="a SentencePiece tokenizer.model (needs sentencepiece or tokenizers) or "
                                       "tokenizer.json file (needs tokenizers), or a Hugging Face tokenizer name or "
                                       "folder (needs transformers)")
    b.add_argument("--version", type=int, choices=[4, 5, 6], default=4,
                   help="4: suffixed files; 5: documents reversed; 6: files without suffix")
    b.add_argument("--shards", type=int, default=1, help="shards to split the corpus into (default 1)")
    b.add_argument("--reverse", action="store_true", default=None, help="store documents reversed (v6)")
    b.add_argument("--no-metadata", dest="metadata", action="store_false", help="no metadata/metaoff files")
    b.add_argument("--no-unigram", dest="unigram", action="store_false", help="no unigram files")
    b.add_argument("--force", action="store_true", help="write into OUT even if it holds files")
    b.add_argument("--mem", help="memory budget of the whole build (every process's resident set, the "
                                 "interpreter's 40 MiB included), e.g. 400M or 2G: suffix arrays sorted in parts "
                                 "and merged, the corpus on disk (the same bytes); an interrupted build resumes "
                                 "when run again")
    b.add_argument("--workers", type=int, default=1,
                   help="processes for the parts, shards and ranges of a shard's merge (share --mem with "
                        "the parent and its resource tracker: 2 workers need at least 149M)")
    b.add_argument("--engine", choices=["local", "dask"], default="local",
                   help="dask: run the parts and shards on a Dask cluster (--scheduler; --mem per task)")
    b.add_argument("--scheduler", help="the Dask scheduler's address, e.g. tcp://host:8786")
    b.add_argument("--json", action="store_true", help="the new index's summary as JSON")
    c = subcommand(gs, "count", help="count a token sequence in an index")
    c.add_argument("index", type=Path, help="an infini-gram index folder")
    c.add_argument("ids", nargs="*", type=int, help="token ids")
    c.add_argument("--text", help="text instead of ids: tokenized with --tokenizer, or its UTF-8 bytes (u8 indexes)")
    c.add_argument("--tokenizer", help="the tokenizer the index was built with (as for build)")
    index_arguments(c)
    c.add_argument("--json", action="store_true", help="the count and the suffix-array ranges as JSON")


def _run(args: argparse.Namespace) -> int:
    return _count(args) if args.infinigram_command == "count" else _build(args)


def _count(args: argparse.Namespace) -> int:
    from ...errors import OptionError
    from . import index as infinigram

    index = infinigram.open(args.index, **read_options(args))
    ids = args.ids
    if args.text is not None:
        if ids:
            raise OptionError("give token ids or --text, not both")
        if args.tokenizer:
            ids = list(tokenizer(args.tokenizer)(args.text))
        elif index.token_width == 1:  # a u8 index without a tokenizer holds the UTF-8 bytes of its texts
            ids = list(args.text.encode("utf-8"))
        else:  # no file of the index records its tokenizer
            raise OptionError(f"--text on an index of {index.token_width}-byte tokens needs --tokenizer "
                              "(the one the index was built with), or give token ids")
    found = index.find(ids)
    if args.json:
        print_json({"query": ids, **found})
    else:
        print(found["cnt"])
    return EXIT_OK


def _build(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from ... import api
    from ...errors import FormatError
    from . import index as infinigram

    if not args.data_dir.is_dir():
        raise FormatError(f"{args.data_dir}: not a folder of JSONL files")
    out = args.out_dir
    if out.exists() and any(out.iterdir()) and not args.force:
        raise FileExistsError(f"{out} holds files (use --force to write the index into it)")
    if args.token_width > 1 and not args.tokenizer:
        print("wvformats: error: --token-width 2 or 4 needs --tokenizer", file=sys.stderr)
        return EXIT_INPUT
    tokenize = tokenizer(args.tokenizer) if args.tokenizer else None
    out.parent.mkdir(parents=True, exist_ok=True)
    resumable = args.mem is not None or args.workers != 1 or args.engine != "local"
    if resumable:  # a fixed place beside OUT, kept when interrupted: the next run resumes from it
        tmp = out.parent / f".{out.name}.partial"
        if tmp.exists() and not args.quiet:
            print(f"wvformats: resuming the build in {tmp}", file=sys.stderr)
    else:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    finished = False
    try:  # build aside, then move in: nothing is left behind on failure
        infinigram.build_jsonl(args.data_dir, tmp, tokenize=tokenize, token_width=args.token_width,
                               version=args.version, shards=args.shards, metadata=args.metadata,
                               unigram=args.unigram, reverse=args.reverse, progress_bar=not args.quiet,
                               max_memory=args.mem, workers=args.workers, engine=args.engine,
                               scheduler=args.scheduler)
        out.mkdir(exist_ok=True)
        for p in sorted(tmp.iterdir()):
            if (out / p.name).is_dir():
                shutil.rmtree(out / p.name)
            os.replace(p, out / p.name)
        finished = True
    except (ValueError, FormatError):  # bad input or options: nothing to resume
        finished = True
        raise
    finally:  # kept after an interruption (SIGTERM, Ctrl-C) or a crash of a worker, for the next run
        if finished or not resumable:
            shutil.rmtree(tmp, ignore_errors=True)
    info = api.inspect(out)
    if args.json:
        print_json(info)
    else:
        print(f"wrote {out} [infini-gram v{args.version}: {info['tokens']} tokens, {info['documents']} documents, "
              f"{info['shards']} shard(s), u{8 * args.token_width}]")
    return EXIT_OK


def tokenizer(name: str) -> Any:
    """The ``encode`` (text -> ids, no special tokens added) of the tokenizer ``name``: a SentencePiece
    ``tokenizer.model`` (see :func:`sentencepiece_encoder`), a ``tokenizer.json`` file (the tokenizers
    package), or a Hugging Face tokenizer name or folder, loaded as the real infini-gram indexer loads it
    (transformers). Anything that cannot be loaded is one error line, at once: a name is looked up in the local
    cache only when the Hub cannot be reached (no minute of retries)."""
    from ... import api
    from ...errors import FormatError, OptionError

    path = Path(name)
    if path.is_file():
        try:
            if api.sniff(path) == "sentencepiece":
                return sentencepiece_encoder(path)
        except FormatError:  # (a tokenizer.json is of no registered format)
            pass
        try:
            import tokenizers
        except ImportError:
            raise OptionError(f"--tokenizer {path} (a tokenizer.json) needs the tokenizers package: "
                              "pip install tokenizers") from None
        try:
            tok = tokenizers.Tokenizer.from_str(path.read_text(encoding="utf-8"))
        except Exception as e:  # noqa: BLE001 - the tokenizers package raises its own exception types
            raise OptionError(f"{path} is neither a tokenizer.json nor a SentencePiece model ({e})") from None
        return lambda t: tok.encode(t, add_special_tokens=False).ids
    host = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").split("://")[-1].split("/")[0]
    if not path.exists() and not os.environ.get("HF_HUB_OFFLINE") and not _reachable(host):
        os.environ["HF_HUB_OFFLINE"] = "1"  # (read when huggingface_hub is imported: set before transformers)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import transformers
    except ImportError:
        raise OptionError("--tokenizer NAME needs the transformers package (or give a tokenizer.json or "
                          "tokenizer.model file)") from None
    try:
        return transformers.AutoTokenizer.from_pretrained(name, use_fast=False, add_bos_token=False,
                                                          add_eos_token=False).encode
    except Exception as e:  # noqa: BLE001 - transformers raises OSError, ValueError, ImportError, ...
        why = (f"it is not in the Hugging Face cache and {host} cannot be reached"
               if os.environ.get("HF_HUB_OFFLINE") else str(e).splitlines()[0])
        raise OptionError(f"cannot load the tokenizer {name!r}: {why}; give a local tokenizer.json or "
                          "SentencePiece tokenizer.model file instead") from None


def sentencepiece_encoder(path: Path) -> Any:
    """The ``encode`` of a SentencePiece ``tokenizer.model``: wvformats reads the model but does not encode with
    it, so the sentencepiece package encodes it (the reference, as the real indexer's slow Llama tokenizer),
    else the tokenizers package through wvformats' tokenizer.json export (checked against sentencepiece; its
    limits in :func:`wvformats.sentencepiece.to_hf_tokenizer`), else an OptionError naming the install."""
    try:
        import sentencepiece
    except ImportError:
        pass
    else:
        processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
        return lambda t: processor.encode(t)
    try:
        import tokenizers
    except ImportError:
        from ...errors import OptionError

        raise OptionError(f"--tokenizer {path} (a SentencePiece model) is encoded by the sentencepiece package: "
                          "pip install sentencepiece") from None
    import json

    from ... import api
    from ..sentencepiece import to_hf_tokenizer

    tok = tokenizers.Tokenizer.from_str(json.dumps(to_hf_tokenizer(api.read(path, "sentencepiece"))))
    return lambda t: tok.encode(t, add_special_tokens=False).ids


def _reachable(host: str, timeout: float = 3.0) -> bool:
    """Whether a TCP connection to ``host``:443 opens within ``timeout`` seconds."""
    import socket

    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


COMMANDS = (Command("infinigram", "infini-gram index tools", _arguments, _run),)
