"""What a command of the ``wvformats`` program is made of, for the commands that format families and plugins
add: the :class:`Command` declaration, the options several commands share, and JSON output.

A family adds commands by a ``commands`` module in its package (``wvformats/families/<family>/commands.py``)
whose ``COMMANDS`` lists :class:`Command` values; it is found as the family's ``codec`` and ``sniff`` modules
are, so ``cli.py`` names no family. A package outside wvformats adds its commands the same way, by a module
named in its ``wvformats.commands`` entry point (or in the ``WVFORMATS_COMMANDS`` variable). Every command
module is imported to build the program's ``--help``: import numpy, construct and the codecs inside ``run``,
never at the top (``wvformats sniff`` starts in a tenth of a second).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2

# makes a subcommand parser as the program makes its own: ``subcommand(group, name, help=...)``, where group is
# what ``parser.add_subparsers()`` returned; the parser takes --debug and --quiet and shows its help as written
Subcommand = Callable[..., argparse.ArgumentParser]


@dataclass(frozen=True)
class Command:
    """A command of the ``wvformats`` program: ``wvformats NAME ...``.

    ``arguments(parser, subcommand)`` adds the command's arguments to its parser (nested commands, as
    ``wvformats rwkv quantize``, through ``subcommand``); ``run(args)`` does the work and returns the exit code
    (0 ok, 1 a check failed, 2 usage or input error). ``run`` may raise FormatError, OptionError, OSError or
    ValueError: the program prints them as one ``wvformats: error:`` line and exits 2.
    """

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser, Subcommand], None]
    run: Callable[[argparse.Namespace], int]
    description: str | None = None


COMMANDS_GROUP = "wvformats.commands"  # entry points (modules with COMMANDS) of installed packages
COMMANDS_VARIABLE = "WVFORMATS_COMMANDS"  # or modules named here, comma-separated
_FAMILIES = "wvformats.families"


def discover() -> tuple[list[Command], dict[str, str]]:
    """The commands of every family with a ``commands`` module, then of the packages that add some, in that
    order, with the modules that failed to import (name -> error): one broken plugin must not take the
    program down."""
    from . import registry

    modules = []
    families = importlib.import_module(_FAMILIES)
    for info in sorted(pkgutil.iter_modules(families.__path__), key=lambda m: m.name):
        if info.ispkg and importlib.util.find_spec(f"{_FAMILIES}.{info.name}.commands") is not None:
            modules.append((info.name, f"{_FAMILIES}.{info.name}.commands"))
    if registry.may_have_entry_points(COMMANDS_GROUP):
        from importlib.metadata import entry_points

        modules += [(ep.name, ep.value) for ep in sorted(entry_points(group=COMMANDS_GROUP), key=lambda e: e.name)]
    modules += [(m, m) for m in filter(None, (m.strip() for m in os.environ.get(COMMANDS_VARIABLE, "").split(",")))]
    found: list[Command] = []
    errors: dict[str, str] = {}
    for name, module in modules:
        try:
            found.extend(importlib.import_module(module).COMMANDS)
        except Exception as e:  # noqa: BLE001 - reported by `wvformats formats`, the others still work
            errors[name] = f"{type(e).__name__}: {e}"
    return found, errors


def print_json(obj: Any) -> None:
    """``obj`` as indented JSON on standard output (numpy scalars as numbers, bytes as hex, paths as text)."""
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False, default=_jsonable)
    sys.stdout.write("\n")


LONG = 16  # the items of a list printed before it is cut (``--all`` shows every one)


def shown(value: Any, keep: int | None = LONG) -> str:
    """``repr(value)`` with every list or tuple in it (also inside dicts and lists) longer than ``keep`` items cut
    to its first ``keep`` and its length: ``['a', 'b', ... (760 in all; --all shows them)]``; ``keep=None``:
    whole. How the commands print long arrays (``inspect``, ``gguf dump``)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {shown(v, keep)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        items = [shown(v, keep) for v in (value if keep is None else value[:keep])]
        if keep is not None and len(value) > keep:
            items.append(f"... ({len(value)} in all; --all shows them)")
        elif isinstance(value, tuple) and len(value) == 1:
            items[0] += ","
        inside = ", ".join(items)
        return f"({inside})" if isinstance(value, tuple) else f"[{inside}]"
    return repr(value)


def _jsonable(o: Any) -> Any:
    if type(o).__module__ == "numpy" and hasattr(o, "item"):  # (numpy itself is not imported for this)
        return o.item()
    if isinstance(o, (bytes, bytearray)):
        return o.hex()
    return str(o)


def unicode_argument(p: argparse.ArgumentParser) -> None:
    """``--unicode-errors``: what a text format does with words that are not UTF-8."""
    p.add_argument("--unicode-errors", choices=["strict", "replace", "ignore"], default=None,
                   help="text formats: words that are not UTF-8 are an error (strict, the default), get U+FFFD "
                        "for each bad byte (replace) or lose them (ignore)")
    p.add_argument("--encoding", metavar="ENC", default=None,
                   help="fastText and the word-vector formats: the encoding of the words, for files whose words "
                        "are not UTF-8 (cp852, latin-1, cp1251, ...; gensim's encoding=); a fastText model looks "
                        "words up by their bytes in it, as fastText does. Default UTF-8")


def header_size_argument(p: argparse.ArgumentParser) -> None:
    """``--max-header-size``: the longest .npy header read, as numpy.load's ``max_header_size``."""
    p.add_argument("--max-header-size", type=int, metavar="N", default=None,
                   help=".npy and .npz: read headers of up to N characters (default 10000, numpy.load's "
                        "max_header_size; numpy.save writes longer ones for dtypes of many fields)")


def index_arguments(p: argparse.ArgumentParser) -> None:
    """What no infini-gram file records: its token width (inferred when only one fits) and its version."""
    p.add_argument("--token-width", type=int, choices=[1, 2, 4],
                   help="infini-gram: bytes per token (default: inferred from the files)")
    p.add_argument("--version", type=int, choices=[4, 5, 6],
                   help="infini-gram: 4 (default), 5 (documents stored reversed) or 6")


def read_options(args: argparse.Namespace) -> dict[str, Any]:
    """The read options given on the command line: an index's token width and version, a text file's
    handling of bytes that are not UTF-8 and the encoding of its words, the longest .npy header."""
    return {k: v for k in ("token_width", "version", "unicode_errors", "encoding", "max_header_size")
            if (v := getattr(args, k, None)) is not None}


def refuse_own_input(out: Path, src: Path) -> None:
    """A FormatError when ``out`` is the file ``src`` (:func:`wvformats.fileio.refuse_own_input`, imported when
    a command writes: the command's parser needs no more than the standard library)."""
    from .fileio import refuse_own_input as refuse

    refuse(out, src)
