"""The framework's public API: what modules outside the framework use of it is exported under a public name,
and docs/framework.md's example of a custom construct runs as written."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

from wvformats import framework

ROOT = Path(__file__).resolve().parents[2]
# every module of the package, the schemas, the tests and the benchmarks, but the framework itself and its own
# unit tests (which may test its private helpers)
MODULES = sorted(p for top in ("wvformats", "schemas", "tests", "benchmarks") for p in (ROOT / top).rglob("*.py")
                 if not p.is_relative_to(ROOT / "wvformats/framework") and not p.is_relative_to(ROOT / "tests/framework"))


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module of a (relative) ``from ... import``."""
    if not node.level:
        return node.module or ""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "schemas":
        parts[0:1] = ["wvformats", "schemas"]
    base = parts[: len(parts) - node.level]
    return ".".join(base + ([node.module] if node.module else []))


def _uses(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every name the module takes from wvformats.framework: imported from it or one of its
    modules, or read as an attribute of it (``framework.walk._walk``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[int, str]] = []
    bound: set[str] = set()  # local names of framework modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            for alias in node.names:
                full = f"{module}.{alias.name}"
                if full == "wvformats.framework" or full.startswith("wvformats.framework."):
                    if module == "wvformats" or full.count(".") == 2 and alias.name in _MODULES:
                        bound.add(alias.asname or alias.name)  # a module of the framework
                        continue
                if module == "wvformats.framework" or module.startswith("wvformats.framework."):
                    out.append((node.lineno, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("wvformats.framework") and alias.asname:
                    bound.add(alias.asname)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in bound:
                chain.reverse()
                names = [c for c in chain if c not in _MODULES]
                if names:
                    out.append((node.lineno, names[0]))
    return out


_MODULES = {p.stem for p in (ROOT / "wvformats/framework").glob("*.py") if p.stem != "__init__"}


def test_no_module_outside_the_framework_uses_its_private_names():
    private = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in MODULES for line, name in _uses(p)
               if name.startswith("_") and not name.startswith("__")]
    assert not private, "framework names with an underscore used outside it:\n" + "\n".join(private)


def test_what_modules_take_from_the_framework_is_its_declared_api():
    declared = set(framework.__all__)
    undeclared = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in MODULES for line, name in _uses(p)
                  if not name.startswith("_") and name not in declared]
    assert not undeclared, "not in wvformats.framework.__all__:\n" + "\n".join(undeclared)
    missing = [name for name in framework.__all__ if not hasattr(framework, name)]
    assert not missing


def test_the_checker_sees_private_uses(tmp_path, monkeypatch):
    """The checker itself: each way of reaching a private name is found."""
    fake = ROOT / "wvformats/families/x/mod.py"
    text = ("from ...framework.fields import _Checked, NumpyArray\nfrom ... import framework\n"
            "framework.walk._walk(1)\nimport wvformats.framework as fw\nfw._tell(2)\n")
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: text)
    assert [n for _, n in _uses(fake)] == ["_Checked", "NumpyArray", "_walk", "_tell"]


def test_the_docs_example_runs_as_written():
    """docs/framework.md's Python blocks, run in order in one namespace: a custom construct that stays
    checked when compiled (a cut file is a located TruncatedError in compiled mode), and its fields in dumps."""
    text = (ROOT / "docs/framework.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    out = io.StringIO()
    namespace: dict[str, object] = {"__name__": "docs_example"}
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, "docs/framework.md", "exec"), namespace)  # noqa: S102 - the docs' own code
    assert out.getvalue() == "demo name at byte 2: the text has no NUL at its end\n"
    assert isinstance(namespace["NulString"](), framework.Checked)
