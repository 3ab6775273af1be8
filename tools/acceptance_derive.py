"""The acceptance check of "derive, don't hand-write" (issue 38), beyond the test suite: one run that shows each
promise on the installed library and prints what it found.

    python3 tools/acceptance_derive.py [--cases 20]

1. the testing kit draws and round-trips (interpreted, compiled, through the codec) every registered single-file
   format, and every cut of a drawn binary file fails with the format's own error;
2. no module under ``wvformats/`` outside ``framework/`` and ``testing/`` decodes or encodes a file's bytes with
   ``struct``, ``int.from_bytes`` or ``.to_bytes`` (the uses that are not a file's bytes are listed with why);
3. no import cycle at any level (imports inside functions counted);
4. ``dump`` of a user schema with ``Switch``, ``IfThenElse`` and an array of structs shows the inner fields;
5. signalling NaNs, NaN payloads and -0.0 in scalar float fields round-trip byte-exact, both construct modes;
6. GGUF's ``general.alignment`` is read and checked by one rule (a UINT64 alignment refused by both).

Exit status 0 when every check holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import struct
import subprocess
import sys
import time
from pathlib import Path

import construct as cs
from construct import this
from hypothesis import settings

import wvformats
from wvformats import framework, registry
from wvformats.errors import FormatError
from wvformats.framework.walk import leaves, walk
from wvformats.testing import property_tests

ROOT = Path(wvformats.__file__).parent
REPO = ROOT.parent

def kit(cases: int) -> list[tuple[str, str]]:
    rows = []
    for name, fmt in sorted(registry.load().items()):
        if fmt.is_directory:
            rows.append((name, "directory format (its files are each a schema's): not drawn whole"))
            continue
        t0 = time.perf_counter()
        try:
            tests = property_tests(name, cases=cases)
            tests["test_roundtrip"]()
            what = f"round trip of {cases} drawn files ok"
            if "test_truncations" in tests and name not in ("glove", "word2vec-text"):
                for compiled in (False, True):
                    tests["test_truncations"](compiled=compiled)
                what += ", every cut refused (both modes)"
            rows.append((name, f"{what} ({time.perf_counter() - t0:.1f} s)"))
        except Exception as e:  # noqa: BLE001 - the check reports whatever failed
            rows.append((name, f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160]}"))
    return rows


def byte_calls() -> tuple[list[str], list[str]]:
    """tests/test_byte_layouts.py's scan (and its named exceptions), run here to print what it finds."""
    spec = importlib.util.spec_from_file_location("test_byte_layouts", REPO / "tests" / "test_byte_layouts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.byte_calls()


def import_cycles() -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-o", "cache_dir=/tmp/acceptance-cache",
                           str(REPO / "tests" / "test_import_graph.py")], capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]


POINT = cs.Struct("x" / cs.Int8ul * "x coordinate", "y" / cs.Int16ul * "y coordinate")
USER = cs.Struct(
    "kind" / cs.Int8ul * "1 or 2",
    "n" / cs.Int8ul * "number of points",
    "points" / cs.Array(this.n, POINT) * "the points",
    "body" / cs.Switch(this.kind, {1: cs.Struct("p" / cs.Float32l * "a float"),
                                   2: cs.Struct("q" / cs.Int16ul * "a number")}) * "by kind",
    "tail" / cs.IfThenElse(this.kind == 1, cs.Struct("t" / cs.Int8ul * "then"), cs.Struct("e" / cs.Int16ul * "else")),
)


def dump_inside() -> tuple[bool, str]:
    data = bytes([1, 2, 5, 6, 0, 7, 8, 0]) + bytes.fromhex("0100807f") + b"\x03"
    paths = [s.path for s in leaves(walk(USER, data, format="demo")[1])]
    want = ["kind", "n", "points[0].x", "points[0].y", "points[1].x", "points[1].y", "body.p", "tail.t"]
    return paths == want, ", ".join(paths)


def floats() -> tuple[bool, str]:
    schema = cs.Struct("h" / cs.Float16l * "half", "f" / cs.Float32l * "single", "d" / cs.Float64l * "double")
    cases = {"signalling NaN": ("017d", "0100807f", "010000000000f07f"),
             "NaN payload": ("ffff", "ffffffff", "ffffffffffffffff"),
             "-0.0": ("0080", "00000080", "0000000000000080")}
    bad = []
    for label, (h, f, d) in cases.items():
        data = bytes.fromhex(h + f + d.replace(" ", ""))
        for compiled in (False, True):
            value = framework.parse(schema, data, format="demo", compile=compiled)
            if framework.build(schema, value, format="demo", compile=compiled) != data:
                bad.append(f"{label} ({'compiled' if compiled else 'interpreted'})")
    return not bad, "all byte-exact" if not bad else "changed: " + ", ".join(bad)


def gguf_alignment() -> tuple[bool, str]:
    import wvformats.schemas.gguf as schema

    def s8(text: str) -> bytes:
        return struct.pack("<Q", len(text)) + text.encode()

    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + s8("general.alignment")
    answers = {}
    for label, entry in (("UINT32 64", struct.pack("<II", 4, 64)), ("UINT64 64", struct.pack("<IQ", 10, 64)),
                         ("UINT32 24", struct.pack("<II", 4, 24))):
        try:
            framework.parse(schema.gguf, head + entry, format="gguf")
            answers[label] = "read"
        except FormatError as e:
            answers[label] = f"refused at {e.path} (byte {e.offset})"
    ok = answers["UINT32 64"] == "read" and all(v.startswith("refused") for k, v in answers.items() if k != "UINT32 64")
    return ok, "; ".join(f"{k}: {v}" for k, v in answers.items())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20, help="drawn files per format (default 20)")
    args = ap.parse_args()
    settings.register_profile("acceptance", max_examples=args.cases, deadline=None)
    settings.load_profile("acceptance")
    failed = False
    print("1. the kit on every registered format")
    for name, what in kit(args.cases):
        failed |= what.startswith("FAILED")
        print(f"   {name:<20} {what}")
    found, allowed = byte_calls()
    failed |= bool(found)
    print(f"2. struct / from_bytes / to_bytes on file bytes outside framework/ and testing/: {len(found)}")
    for line in found:
        print(f"   {line}")
    print(f"   not file bytes ({len(allowed)}):")
    for line in allowed:
        print(f"   {line}")
    cycles = import_cycles()
    failed |= "failed" in cycles or "error" in cycles
    print(f"3. import graph (cycles at any level, layers, private names): {cycles}")
    for label, (ok, what) in (("4. dump inside Switch / IfThenElse / arrays of structs", dump_inside()),
                              ("5. float fields bit for bit", floats()),
                              ("6. GGUF alignment, one rule", gguf_alignment())):
        failed |= not ok
        print(f"{label}: {'ok' if ok else 'FAILED'}: {what}")
    print("FAILED" if failed else "every check holds")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
