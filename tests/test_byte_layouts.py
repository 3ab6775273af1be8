"""The schema is the one place that knows a byte layout: no module under ``wvformats/`` outside ``framework/``
and ``testing/`` decodes or encodes a file's bytes with ``struct``, ``int.from_bytes`` or ``.to_bytes``
(issue 38, item 3). The uses whose bytes are no file's are named here, each with why."""

from __future__ import annotations

import ast
from pathlib import Path

import wvformats

ROOT = Path(wvformats.__file__).parent

# (path under wvformats/, call) -> why its bytes are no file's
NOT_FILE_BYTES = {
    ("families/finalfusion/lookups.py", "to_bytes"): "the input of finalfusion's hashers (FNV-1a of an index)",
    ("families/finalfusion/lookups.py", "from_bytes"): "MurmurHash3 over a word's bytes (the hash's own blocks)",
    ("families/finalfusion/lookups.py", "struct"): "float32 rounding of a computed norm (no file is read)",
    ("families/fasttext/arithmetic.py", "struct"): "float32 rounding of fastText's arithmetic (no file is read)",
    ("families/fasttext/convert.py", "struct"): "the bits of fastText's default t (1e-4), a constant",
}


def byte_calls(root: Path = ROOT) -> tuple[list[str], list[str]]:
    """The uses outside framework/ and testing/ (``path:line call``), and those named above (with why)."""
    found, allowed = set(), set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("framework/", "testing/")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            call = None
            if isinstance(node, ast.Attribute) and node.attr in ("from_bytes", "to_bytes"):
                call = node.attr
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "struct":
                call = "struct"
            elif isinstance(node, ast.ImportFrom) and node.module == "struct":
                call = "struct"
            if call:
                line = f"wvformats/{rel}:{node.lineno} {call}"
                why = NOT_FILE_BYTES.get((rel, call))
                (allowed if why else found).add(f"{line} ({why})" if why else line)
    return sorted(found), sorted(allowed)


def test_no_module_outside_the_framework_reads_file_bytes_by_hand():
    found, _ = byte_calls()
    assert not found, "\n".join(found)


def test_the_scan_sees_each_form(tmp_path):
    """(so that the test above could fail)"""
    (tmp_path / "families").mkdir()
    (tmp_path / "families" / "x.py").write_text(
        "import struct\nfrom struct import unpack\nn = int.from_bytes(b'ab', 'little')\nb = n.to_bytes(2, 'little')\n"
        "v = struct.unpack('<H', b)\n")
    (tmp_path / "framework").mkdir()
    (tmp_path / "framework" / "y.py").write_text("n = int.from_bytes(b'ab', 'little')\n")
    found, allowed = byte_calls(tmp_path)
    assert found == ["wvformats/families/x.py:2 struct", "wvformats/families/x.py:3 from_bytes",
                     "wvformats/families/x.py:4 to_bytes", "wvformats/families/x.py:5 struct"] and not allowed


def test_every_named_exception_is_still_used():
    _, allowed = byte_calls()
    used = {(line.split(":")[0].removeprefix("wvformats/"), line.split(" ")[1]) for line in allowed}
    assert used == set(NOT_FILE_BYTES)
