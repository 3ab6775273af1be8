"""The ggml family's commands: ``wvformats rwkv quantize``, and ``wvformats gguf dump | set | new`` as llama.cpp's
gguf-py scripts (``gguf-dump``, ``gguf-set-metadata``, ``gguf-new-metadata``) have them."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...commands import EXIT_INPUT, EXIT_OK, LONG, Command, Subcommand, refuse_own_input, shown
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
        print(f"wvformats: error: {args.src}: {e}", file=sys.stderr)
        return EXIT_INPUT
    refuse_own_input(args.dst, args.src)
    api.write(out, args.dst, "rwkv", overwrite=args.force)
    print(f"wrote {args.dst} [rwkv {out.version}, {args.type}]")
    return EXIT_OK


def _gguf_arguments(p: argparse.ArgumentParser, subcommand: Subcommand) -> None:
    gs = p.add_subparsers(dest="gguf_command", metavar="GGUF_COMMAND", required=True)
    d = subcommand(gs, "dump", help="every metadata key/value and tensor (gguf-dump; --json as gguf-dump --json)")
    d.add_argument("file", type=Path, help="a GGUF file")
    d.add_argument("--json", action="store_true", help="gguf-dump's JSON: metadata (index, type, offset, value) "
                                                      "and tensors (index, shape, type, offset)")
    d.add_argument("--json-array", action="store_true", help="with --json: arrays' values too (long)")
    d.add_argument("--no-tensors", action="store_true", help="leave out the tensors")
    d.add_argument("--all", action="store_true", help="text: every element of arrays (default: the first 16)")
    s = subcommand(gs, "set", help="set one metadata value: in place when the value keeps its size (a number, "
                                   "as gguf-set-metadata does), else the file rewritten atomically")
    s.add_argument("file", type=Path, help="the GGUF file to edit")
    s.add_argument("key", help="the metadata key")
    s.add_argument("value", help="its new value (a number, true/false, or text)")
    s.add_argument("--type", dest="value_type", metavar="TYPE",
                   help="the value's GGUF type (UINT32, FLOAT32, STRING, BOOL, ...; default: the key's, or STRING "
                        "for a new key); a key the file lacks is added with it")
    s.add_argument("--add", action="store_true",
                   help="add the key if the file lacks it (default: refused, naming the closest key, as "
                        "gguf-set-metadata refuses: a mistyped key is no new one)")
    n = subcommand(gs, "new", help="a copy with metadata set and removed (gguf-new-metadata)")
    n.add_argument("src", type=Path, help="the GGUF file to read")
    n.add_argument("dst", type=Path, help="the GGUF file to write")
    n.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="set a key (repeat; its type as the key's, or KEY:TYPE=VALUE, which also adds a key the "
                        "file lacks: without a type one is refused, naming the closest key)")
    n.add_argument("--remove", action="append", default=[], metavar="KEY", help="remove a key (repeat)")
    n.add_argument("--force", action="store_true", help="replace DST if it exists")


def _typed(text: str, type_name: str) -> object:
    """A command-line value as a GGUF type takes it."""
    from ...errors import OptionError

    try:
        if type_name == "BOOL":
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        if type_name.startswith(("UINT", "INT")):
            return int(text, 0)
        if type_name.startswith("FLOAT"):
            return float(text)
    except ValueError:
        raise OptionError(f"{text!r} is no {type_name} value") from None
    if type_name != "STRING":
        raise OptionError(f"a {type_name} value cannot be given on the command line (scalars and strings only)")
    return text


def _set(model: object, key: str, text: str, type_name: str | None, file: Path) -> None:
    meta = model.metadata  # type: ignore[attr-defined]
    if key not in meta and not type_name:
        _refuse_new_key(meta, key, file, f"--set {key}:STRING={text} (or another type) adds it")
    kind = type_name or meta.type(key)
    meta.set(key, _typed(text, kind), type=kind)


def _refuse_new_key(meta: object, key: str, file: Path, how: str) -> None:
    """A key the file lacks is refused unless asked for (as gguf-set-metadata refuses it): a mistyped key
    (``llama.context_lenght``) would otherwise be added as a new one, which no reader looks at."""
    import difflib

    from ...errors import OptionError

    close = difflib.get_close_matches(key, list(meta), n=1)  # type: ignore[call-overload]
    hint = f" (the closest is {close[0]!r})" if close else ""
    raise OptionError(f"{file}: no metadata key {key!r}{hint}; {how}")


def _gguf(args: argparse.Namespace) -> int:
    from ... import api
    from ...errors import OptionError

    if args.gguf_command == "dump":
        return _dump(api.read(args.file, "gguf"), args)
    if args.gguf_command == "set":
        return _set_file(args)
    model = api.read(args.src, "gguf")
    for key in args.remove:
        if key not in model.metadata:
            raise OptionError(f"{args.src} has no key {key!r} to remove")
        del model.metadata[key]
    for item in args.set:
        key, sep, text = item.partition("=")
        if not sep:
            raise OptionError(f"--set takes KEY=VALUE, not {item!r}")
        key, _, type_name = key.partition(":")
        _set(model, key, text, type_name or None, args.src)
    refuse_own_input(args.dst, args.src)
    api.write(model, args.dst, "gguf", overwrite=args.force)
    print(f"wrote {args.dst} [gguf, {len(model.metadata)} keys, {len(model.tensors)} tensors]")
    return EXIT_OK


def _set_file(args: argparse.Namespace) -> int:
    """In place when the key holds a number of the same type (the bytes of the value alone change), as
    gguf-set-metadata does; otherwise the whole file rewritten, atomically. A key the file lacks is added only
    with --add or --type (else refused, as gguf-set-metadata refuses it)."""
    import numpy as np

    from ... import api
    from ...schemas.gguf import VALUE_TYPES

    model = api.read(args.file, "gguf", mmap=True)  # (a model of GBs: only the metadata is read)
    meta = model.metadata
    kv = meta._kv.get(args.key)  # (this family's own model)
    if kv is None and not (args.add or args.value_type):
        _refuse_new_key(meta, args.key, args.file, "--add adds it (a STRING, or of --type TYPE)")
    kind = args.value_type or (meta.type(args.key) if kv is not None else "STRING")
    value = _typed(args.value, kind)
    dtype = dict(VALUE_TYPES.values()).get(kind)
    if (kv is not None and kind == meta.type(args.key) and dtype is not None and model.version >= 2
            and kv.get("_offset") is not None and _plain_gguf(args.file)):
        meta.set(args.key, value, type=kind)  # (checks the value against the type, as any assignment does)
        at = kv["_end"] - np.dtype(dtype).itemsize  # (the value: the entry's last bytes, as parsed)
        with open(args.file, "r+b") as f:
            f.seek(at)
            f.write(np.array([value], dtype).tobytes())
        print(f"set {args.key} = {value!r} [{kind}, in place at byte {at}]")
        return EXIT_OK
    meta.set(args.key, value, type=kind)
    api.write(model, args.file, "gguf", overwrite=True)
    print(f"{'set' if kv is not None else 'added'} {args.key} = {value!r} [{kind}, {args.file} rewritten]")
    return EXIT_OK


def _plain_gguf(path: Path) -> bool:
    """The file holds GGUF bytes as they are (not compressed): its offsets are the parse's."""
    from ...schemas.identity import GGUF_MAGIC

    with open(path, "rb") as f:
        return f.read(len(GGUF_MAGIC)) == GGUF_MAGIC


def _dump(model: object, args: argparse.Namespace) -> int:
    from ...commands import print_json

    meta = model.metadata  # type: ignore[attr-defined]
    tensors = model.tensors  # type: ignore[attr-defined]
    if args.json:
        # the header's fields first, as gguf-dump lists them (the counts are u32 in version 1)
        count = "UINT32" if model.version == 1 else "UINT64"  # type: ignore[attr-defined]
        metadata: dict[str, object] = {
            "GGUF.version": {"index": 0, "type": "UINT32", "offset": 4, "value": model.version},  # type: ignore[attr-defined]
            "GGUF.tensor_count": {"index": 1, "type": count, "offset": 8, "value": len(tensors)},
            "GGUF.kv_count": {"index": 2, "type": count, "offset": 12 if count == "UINT32" else 16,
                              "value": len(meta)}}
        for i, key in enumerate(meta, 3):
            kv = meta._kv[key]
            kind = meta.type(key)
            entry: dict[str, object] = {"index": i, "type": kind.split("[")[0], "offset": kv.get("_offset")}
            if kind.startswith("ARRAY"):
                entry["array_types"] = [kind[6:-1]]
                if args.json_array:
                    entry["value"] = _jsonable(meta[key])
            else:
                entry["value"] = _jsonable(meta[key])
            metadata[key] = entry
        out: dict[str, object] = {"filename": str(args.file), "endian": "LITTLE", "metadata": metadata}
        out["tensors"] = {} if args.no_tensors else {
            name: {"index": i, "shape": list(reversed(t.shape)), "type": t.dtype,  # (ggml's order: ne0 first)
                   "offset": t._where[1] if t._where else None}
            for i, (name, t) in enumerate(tensors.items())}
        print_json(out)
        return EXIT_OK
    print(f"# {args.file}: GGUF v{model.version}, {len(meta)} keys, {len(tensors)} tensors")  # type: ignore[attr-defined]
    for i, key in enumerate(meta):
        print(f"{i:5}: {meta.type(key):16} {key} = {shown(_jsonable(meta[key]), None if args.all else LONG)}")
    if not args.no_tensors:
        for i, (name, t) in enumerate(tensors.items()):
            print(f"{i:5}: {t.dtype:8} {name} {list(reversed(t.shape))} (ggml order: ne0 first)")
    return EXIT_OK


def _jsonable(value: object) -> object:
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)) or type(value).__name__ == "StringArray":
        return [_jsonable(v) for v in value]  # type: ignore[union-attr]
    return value


COMMANDS = (Command("rwkv", "rwkv.cpp model tools", _rwkv_arguments, _rwkv),
            Command("gguf", "GGUF metadata tools: dump, set, new (as llama.cpp's gguf-py scripts)", _gguf_arguments,
                    _gguf))
