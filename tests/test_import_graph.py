"""The package's import graph points one way: cli -> api -> families -> schemas -> framework -> errors. Every
import counts, at the top of a module or inside a function; a module may import its own layer or any below.
The imports form no cycle, inside functions neither; a family uses another only through the names its package
lists; no module uses another module's underscore names, imported or reached as an attribute."""

import ast
from pathlib import Path

import pytest

import wvformats

ROOT = Path(wvformats.__file__).parent
LAYERS = ("errors", "framework", "schemas", "families", "api", "cli")

# the modules of the top level that are neither the API nor the command: what the families share (the
# registry and the Format a codec registers, the Embeddings model and its gensim query surface, the words' rows
# and spelling, files opened and compressed, progress reporting, the compiled kernels' loader)
SHARED = {"registry", "formatclass", "embeddings", "queries", "words", "spelling", "fileio", "compression", "progress",
          "compiled"}
CLI = {"cli", "commands", "samples"}


def _modules() -> dict[str, Path]:
    import wvformats.schemas

    found = {}
    for base, package in ((ROOT, "wvformats"), (Path(wvformats.schemas.__file__).parent, "wvformats.schemas")):
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if package == "wvformats" and parts[0] == "schemas":
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def layer(module: str) -> int:
    parts = module.split(".")[1:]
    if not parts:
        return LAYERS.index("api")  # the package: read, write, convert, ...
    head = parts[0]
    if head == "errors":
        return LAYERS.index("errors")
    if head in ("framework", "schemas"):
        return LAYERS.index(head)
    if head == "families":
        return LAYERS.index("cli" if parts[-1] == "commands" else "families")
    if head in SHARED:
        return LAYERS.index("families")
    if head in CLI:
        return LAYERS.index("cli")
    return LAYERS.index("api")  # api.py, and the public module of each family (wvformats.gguf, ...)


def _imports(module: str, path: Path, top_only: bool = False, typing: bool = True) -> set[str]:
    """The names ``module`` imports from the package: at its top (``top_only``) or anywhere, inside functions
    too; with ``typing`` False, not those only a type checker runs (``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    nodes = tree.body if top_only else ast.walk(tree)
    skipped = set() if typing else {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                                    and "TYPE_CHECKING" in ast.unparse(block.test) for n in ast.walk(block)}
    found = set()
    for node in nodes:
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("wvformats"):  # each name: a module, or a name of the module ``target``
                found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("wvformats"))
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module an imported name is (``from .x import y``: y when it is a module, else x)."""
    while name and name not in modules:
        name = name.rsplit(".", 1)[0] if "." in name else ""
    return name or None


def test_no_import_points_up_a_layer():
    modules = _modules()
    wrong = []
    for module, path in sorted(modules.items()):
        for name in _imports(module, path):
            target = _resolve(name, modules)
            if target and target != module and layer(target) > layer(module):
                wrong.append(f"{module} ({LAYERS[layer(module)]}) imports {target} ({LAYERS[layer(target)]})")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("top_only", [True, False], ids=["top level", "inside functions too"])
def test_imports_form_no_cycle(top_only):
    """No cycle among the modules, counting the imports a function makes when it runs (the ones only a type
    checker reads aside): a module that imports another inside a function to dodge a cycle has one."""
    modules = _modules()
    graph = {m: {t for n in _imports(m, p, top_only=top_only, typing=False) if (t := _resolve(n, modules)) and t != m}
             for m, p in modules.items()}
    state: dict[str, int] = {}

    def visit(m: str, trail: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                raise AssertionError("import cycle: " + " -> ".join(trail[trail.index(t):] + [m, t])
                                     if t in trail else f"import cycle through {m} -> {t}")
            if t not in state:
                visit(t, [*trail, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_the_layers_are_what_the_docs_say():
    assert layer("wvformats.cli") > layer("wvformats.api") > layer("wvformats.families.ggml.gguf") \
        > layer("wvformats.schemas.gguf") > layer("wvformats.framework.fields") > layer("wvformats.errors")
    assert layer("wvformats.families.ggml.commands") == layer("wvformats.cli")


def _family(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "families" else None


def _public_names(package: str, modules: dict[str, Path]) -> set[str]:
    """The names a family's package lists in its ``__all__`` (its public surface)."""
    tree = ast.parse(modules[package].read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def test_families_use_each_other_only_through_their_packages():
    """A family uses another through the names its package (``families/<family>/__init__.py``) lists, never by
    one of its modules: a family's modules are its own to split or rename."""
    modules = _modules()
    wrong = []
    for module, path in sorted(modules.items()):
        family = _family(module)
        if family is None:
            continue
        for name in sorted(_imports(module, path)):
            target = _resolve(name, modules)
            other = _family(target) if target else None
            if other is None or other == family:
                continue
            package = f"wvformats.families.{other}"
            if target != package:
                wrong.append(f"{module} imports {name}: a module of {other}, not its package")
            elif name.rsplit(".", 1)[-1] not in _public_names(package, modules):
                wrong.append(f"{module} imports {name}, which {package}.__all__ does not list")
    assert not wrong, "\n".join(wrong)


def test_each_familys_public_names_are_there():
    """Every name a family's package lists can be imported from it (each when first asked for:
    tests/test_startup.py shows that importing the package, as sniff does, imports none of them)."""
    import importlib

    modules = _modules()
    packages = sorted(m for m in modules if m.count(".") == 2 and m.startswith("wvformats.families."))
    missing = [f"{package}.{name}" for package in packages for name in sorted(_public_names(package, modules))
               if not hasattr(importlib.import_module(package), name)]
    assert not missing
    assert _public_names("wvformats.families.ggml", modules) >= {"GGUFModel", "quantize"}


# namedtuple's methods: public, underscored only to stay clear of the field names
NAMEDTUPLE = {"_asdict", "_replace", "_fields", "_make", "_field_defaults"}


def _owner(name: str) -> str | None:
    """The module or package a dotted name's first private part (``_x``, not ``__x__``) belongs to; None when
    no part is private."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")) and part not in NAMEDTUPLE:
            return ".".join(parts[:i])
    return None


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` of an attribute chain of names, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)) is not None:
        return f"{base}.{node.attr}"
    return None


def _private_uses(module: str, path: Path) -> list[str]:
    """The names ``module`` uses that are private to another module: imported (``from .m import _x``, a
    package's private module ``from .p import _m``) or reached through what it imported (``m._x``,
    ``Cls._x``, ``p.m._x``), at its top or inside functions. A module's private names are its own (and, for a
    package, its modules')."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    bound: dict[str, str] = {}  # local name -> the dotted name it was imported as
    used = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
            if target.startswith("wvformats"):
                for a in node.names:
                    bound[a.asname or a.name] = f"{target}.{a.name}"
                    used.append((f"{target}.{a.name}", node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("wvformats"):
                    bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                    used.append((a.name, node.lineno))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (name := _dotted(node)) is not None:
            head, _, rest = name.partition(".")
            if head in bound:
                used.append((f"{bound[head]}.{rest}", node.lineno))
    return [f"{module}:{line} uses {name}" for name, line in used
            if (owner := _owner(name)) is not None and module != owner and not module.startswith(owner + ".")]


def test_no_module_uses_another_modules_private_names():
    """What a module names with an underscore is its own business: no other module imports it or reaches it
    as an attribute (``registry._x``), inside functions too. Another module that needs it needs a public name."""
    modules = _modules()
    wrong = [use for module, path in sorted(modules.items()) for use in _private_uses(module, path)]
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_the_private_name_check_sees_imports_and_attributes(tmp_path):
    """The check above finds each way of reaching another module's private name, inside functions too, and
    lets a package's modules use its private modules (``wvformats._installed``) and namedtuple's methods."""
    path = tmp_path / "m.py"
    path.write_text("from . import registry\nfrom .framework.walk import _x\nimport wvformats.fileio as f\n"
                    "from ._installed import version\n"
                    "def g():\n    from .families import ggml\n    return registry._y, f._z, ggml.gguf._w, "
                    "ggml.SNIFF._asdict(), f.__name__\n")
    found = {use.split(" uses ")[1] for use in _private_uses("wvformats.m", path)}
    assert found == {"wvformats.framework.walk._x", "wvformats.registry._y", "wvformats.fileio._z",
                     "wvformats.families.ggml.gguf._w"}
