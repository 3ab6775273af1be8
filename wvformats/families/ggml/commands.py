"""The ggml family's commands: ``wvformats rwkv quantize``."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...commands import EXIT_INPUT, EXIT_OK, Command, Subcommand, refuse_own_input
from .sniff import QUANTIZE_TYPES


def _rwkv_arguments(p: argparse.ArgumentParser, subcommand: Subcommand) -> None:
    rs = p.add_subparsers(dest="rwkv_command", metavar="RWKV_COMMAND", required=True)
    q = subcommand(rs, "quantize", help="quantize an FP32/FP16 model with rwkv.cpp's rules (--version: also "
                                        "convert 100 <-> 101; a model quantized to TYPE can change version)")
    q.add_argument("src", type=Path, help="an FP32/FP16 rwkv.cpp model")
    q.add_argument("dst", type=Path, help="the quantized model to write")
    q.add_argument("--type", required=True, choices=sorted({t for ts in QUANTIZE_TYPES.values() for t in ts}),
                   help="target type (Q4_2: version 100 only)")
    q.add_argument("--version", type=int, choices=[100, 101], help="output file version (default: the input's)")
    q.add_argument("--force", action="store_true", help="replace DST if it exists")


def _rwkv(args: argparse.Namespace) -> int:
    import sys

    from ... import api
    from .rwkv import quantize_model

    model = api.read(args.src, "rwkv")
    try:
        out = quantize_model(model, args.type, args.version)
    except ValueError as e:
        print(f"wvformats: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    refuse_own_input(args.dst, args.src)
    api.write(out, args.dst, "rwkv", overwrite=args.force)
    print(f"wrote {args.dst} [rwkv {out.version}, {args.type}]")
    return EXIT_OK


COMMANDS = (Command("rwkv", "rwkv.cpp model tools", _rwkv_arguments, _rwkv),)
