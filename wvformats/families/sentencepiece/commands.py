"""The SentencePiece family's commands: ``wvformats sentencepiece export``."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...commands import EXIT_INPUT, EXIT_OK, Command, Subcommand, refuse_own_input


def _arguments(p: argparse.ArgumentParser, subcommand: Subcommand) -> None:
    ss = p.add_subparsers(dest="sp_command", metavar="SENTENCEPIECE_COMMAND", required=True)
    e = subcommand(ss, "export", help="export the vocabulary: hf (tokenizer.json), tsv or json")
    e.add_argument("model", type=Path, help="a SentencePiece tokenizer.model")
    e.add_argument("out", type=Path, help="the file to write")
    e.add_argument("--to", choices=["hf", "tsv", "json"], required=True,
                   help="hf: a Hugging Face tokenizer.json; tsv: piece, score and type per line; json: the same "
                        "as a list of objects")
    e.add_argument("--force", action="store_true", help="replace OUT if it exists")


def _run(args: argparse.Namespace) -> int:
    import json
    import sys

    from ... import api
    from ...errors import FormatError
    from ...fileio import atomic_output
    from . import exports as S

    model = api.read(args.model, "sentencepiece")
    try:
        if args.to == "hf":
            text = json.dumps(S.to_hf_tokenizer(model), ensure_ascii=False, indent=2)
        elif args.to == "json":
            text = json.dumps(S.to_json(model), ensure_ascii=False, indent=1)
        else:
            text = S.to_tsv(model)
    except ValueError as e:
        print(f"wvformats: error: {args.model}: {e}", file=sys.stderr)
        return EXIT_INPUT
    refuse_own_input(args.out, args.model)
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


COMMANDS = (Command("sentencepiece", "SentencePiece model tools", _arguments, _run),)
