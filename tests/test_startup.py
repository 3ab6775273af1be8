"""Start-up: ``wvformats sniff`` imports no numpy and no construct, ``inspect`` and ``registry.get`` import
only the codec of the family they need, and the light sniffers (the families' ``sniff`` modules) tell every
file as the full registry does. Each check runs in a fresh interpreter, since the test process has
imported everything long before; no wall time is asserted (benchmarks/bench_startup.py measures it)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from wvformats import api, framework, registry
from wvformats.errors import FormatError
from wvformats.samples import sample_files

HEAVY = ("numpy", "construct", "pyarrow", "importlib.metadata")


def _fresh(code, *args, env=None):
    """Run ``code`` in a fresh interpreter (-P: the wvformats this test imports, not a source tree in the
    cwd); its last stdout line, as JSON."""
    out = subprocess.run([sys.executable, "-P", "-c", code, *map(str, args)], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


_LOADED = ("import json, sys\n"
           "def loaded():\n"
           "    return sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'construct', 'pyarrow')\n"
           "                  or m == 'importlib.metadata' or m.startswith('wvformats.families.'))\n")


def test_sniff_of_every_sample_imports_neither_numpy_nor_construct():
    files = sample_files()
    got = _fresh(_LOADED + "from wvformats import cli\n"
                 "rc = cli.main(['sniff', '--json', *sys.argv[1:]])\n"
                 "print(json.dumps([rc, loaded()]))", *files)
    rc, modules = got
    assert rc == 0
    assert [m for m in modules if m.split(".")[0] in HEAVY or m == "importlib.metadata"] == []
    # of the families, their packages, sniff modules and (for the parser) commands modules only: no codec, model
    # or schema
    assert {m.split(".")[-1] for m in modules} - {"sniff", "commands"} <= {m.split(".")[2] for m in modules}


def _families_imported(modules):
    """The families whose modules other than ``sniff`` (and ``commands``, which the command's parser imports
    from every family that has one: standard library only) were imported."""
    return sorted({m.split(".")[2] for m in modules if m.count(".") >= 3 and not m.endswith((".sniff", ".commands"))})


def test_inspect_of_a_text_file_imports_neither_numpy_nor_construct():
    texts = [p for p in sample_files() if p.suffix in (".vec", ".txt", ".glove")]
    assert len(texts) == 3
    for text in texts:
        rc, modules = _fresh(_LOADED + "import contextlib, io\nfrom wvformats import cli\n"
                             "with contextlib.redirect_stdout(io.StringIO()):\n"
                             "    rc = cli.main(['inspect', sys.argv[1]])\n"
                             "print(json.dumps([rc, loaded()]))", text)
        assert rc == 0
        assert [m for m in modules if m.split(".")[0] in HEAVY] == [], text
        assert _families_imported(modules) == ["wordvec"]  # (its sniff module and the quick summary)


def test_inspect_of_a_binary_file_imports_no_other_family():
    bin_ = next(p for p in sample_files() if p.name == "sample.bin")
    rc, modules = _fresh(_LOADED + "import contextlib, io\nfrom wvformats import cli\n"
                         "with contextlib.redirect_stdout(io.StringIO()):\n"
                         "    rc = cli.main(['inspect', sys.argv[1]])\n"
                         "print(json.dumps([rc, loaded()]))", bin_)
    assert rc == 0
    assert _families_imported(modules) == ["wordvec"]
    assert "pyarrow" not in modules  # (a quick inspect parses no text body of this size with pyarrow)


def test_get_imports_only_the_family_of_the_format():
    modules = _fresh(_LOADED + "from wvformats import registry\n"
                     "assert registry.get('word2vec-text').name == 'word2vec-text'\n"
                     "print(json.dumps(loaded()))")
    assert _families_imported(modules) == ["wordvec"]
    assert "importlib.metadata" not in modules  # no plugin is installed: its scan is skipped


def test_import_wvformats_imports_no_numpy():
    modules = _fresh(_LOADED + "import wvformats, wvformats.cli\nprint(json.dumps(loaded()))")
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []
    modules = _fresh(_LOADED + "from wvformats import Embeddings\nprint(json.dumps(loaded()))")
    assert "numpy" in modules  # (the lazy names are there when asked for)


def test_each_family_codec_registers_what_its_sniff_module_declares():
    """The light sniffers stand in for the codecs' until these are imported: each codec registers exactly
    the formats its family's sniff module declares, with their names, extensions, priorities and sniffers."""
    new = _fresh("import importlib, json\nfrom wvformats import registry\nout = {}\n"
                 "for family in sorted({f for f, _ in registry._declared().values()}):\n"
                 "    before = set(registry._FORMATS)\n"
                 "    importlib.import_module(f'wvformats.families.{family}.codec')\n"
                 "    out[family] = sorted(set(registry._FORMATS) - before)\n"
                 "print(json.dumps(out))")
    declared = registry._declared()
    assert {"wordvec", "finalfusion", "ggml", "sentencepiece", "infinigram"} <= set(new)
    assert new == {family: sorted(n for n, (f, _) in declared.items() if f == family) for family in new}
    formats = registry.load()
    for name, (_, sniffer) in declared.items():
        fmt = formats[name]
        assert tuple(getattr(fmt, field) for field in registry.Sniffer._fields) == tuple(sniffer), name


def _corpus(tmp_path):
    """Every sample, cut at 40 places and with 40 random corruptions of its first 64 KiB; a folder sample and
    each file in it (a sharded checkpoint's index reads as the folder format)."""
    paths = []
    for path in sample_files():
        if path.is_dir():
            paths.extend([path, *sorted(p for p in path.iterdir() if p.is_file())])
            continue
        data = path.read_bytes()[:70000]
        rng = np.random.default_rng(len(data))
        variants = [data[:n] for n in range(0, len(data), max(1, len(data) // 40))]
        for _ in range(40):
            bad = bytearray(data)
            bad[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
            variants.append(bytes(bad))
        for i, v in enumerate(variants):
            p = tmp_path / f"{path.name}.{i}"
            p.write_bytes(v)
            paths.append(p)
    return paths


def _sniffed(paths):
    out = {}
    for p in paths:
        try:
            out[str(p)] = api.sniff(p)
        except FormatError as e:
            out[str(p)] = type(e).__name__
    return out


def test_light_sniff_tells_every_file_as_the_full_registry(tmp_path):
    """Samples, cut and corrupted: sniffed in a fresh process (the families' sniff modules only, no codec),
    first with every sniff module imported (the index of declared sniffers derived), then through the index
    (each family's module imported when a head reaches its formats), and here with every codec imported: the
    same format or the same error each time."""
    paths = _corpus(tmp_path)
    listing = tmp_path / "paths.json"
    listing.write_text(json.dumps([str(p) for p in paths]))
    env = {**os.environ, "WVFORMATS_CACHE_DIR": str(tmp_path / "cache")}
    code = (_LOADED + "from wvformats import api\nfrom wvformats.errors import FormatError\nout = {}\n"
            "for p in json.load(open(sys.argv[1])):\n"
            "    try:\n        out[p] = api.sniff(p)\n"
            "    except FormatError as e:\n        out[p] = type(e).__name__\n"
            "assert 'numpy' not in loaded()\n"
            "print(json.dumps(out))")
    derived, indexed = _fresh(code, listing, env=env), _fresh(code, listing, env=env)
    registry.load()
    assert derived == _sniffed(paths)
    assert indexed == derived


def _index_file(cache):
    return next(cache.glob(f"*/{registry.INDEX_FILE}"))


def _index_of_modules():
    """The index's records as this process's families' sniff modules declare them."""
    return [registry._record(family, s) for _, (family, s) in sorted(registry._declared().items())]


def _all_families():
    return sorted({family for family, _ in registry._declared().values()})


def _sniff_fresh(cache, *paths, families=None):
    """The formats of ``paths`` sniffed in a fresh interpreter with the cache folder ``cache`` (``families``:
    a folder added to the families' package path first), and the families whose sniff module it imported."""
    extra = f"import wvformats.families\nwvformats.families.__path__.append({str(families)!r})\n" \
        if families else ""
    return _fresh(_LOADED + extra + "from wvformats import api\nout = [api.sniff(p) for p in sys.argv[1:]]\n"
                  "sniffed = sorted(m.split('.')[2] for m in loaded() if m.endswith('.sniff'))\n"
                  "print(json.dumps([out, sniffed]))", *paths,
                  env={**os.environ, "WVFORMATS_CACHE_DIR": str(cache)})


def test_the_index_of_declared_sniffers_is_what_the_sniff_modules_declare(tmp_path):
    """The first process derives the index from every family's sniff module and keeps it: each format's name,
    family, extensions, priority, kind, magic, fast reader and whether it has a resembles and an entry, as the
    modules declare them, with the stamps of the files they came from (every sniff module, the identity of the
    schemas, the registry); a later process then imports only the sniff modules of the families a head
    reaches."""
    cache = tmp_path / "cache"
    safetensors = next(p for p in sample_files() if p.suffix == ".safetensors")
    assert _sniff_fresh(cache, safetensors)[1] == _all_families()
    kept = json.loads(_index_file(cache).read_text())
    assert kept["formats"] == _index_of_modules() and kept["old_style"] == []
    stamped = {Path(p) for p, _ in kept["stamps"]}
    root = Path(registry.__file__).parent
    assert {root / "families" / family / "sniff.py" for family, _ in registry._declared().values()} <= stamped
    assert {Path(registry.__file__), Path(sys.modules["wvformats.schemas.identity"].__file__)} <= stamped
    assert all(framework.stamp(p) == kept_stamp for p, kept_stamp in kept["stamps"])
    assert _sniff_fresh(cache, safetensors) == [["safetensors"], ["safetensors"]]


def test_a_stale_index_is_noticed_and_derived_again(tmp_path):
    """An index whose files changed since (a stamp that differs) is not read: every sniff module is imported
    and the index kept again. One whose stamps hold but whose records differ from a module the sniff imports
    (an edit the stamps did not see) is noticed there: the sniff starts again on the modules themselves, and
    the index is derived again. Each time the file is told as the modules tell it."""
    cache = tmp_path / "cache"
    safetensors = next(p for p in sample_files() if p.suffix == ".safetensors")
    _sniff_fresh(cache, safetensors)
    file = _index_file(cache)
    kept = json.loads(file.read_text())
    true = kept["formats"]

    def forged(changes):
        return [[*r[:3], r[3] + changes.get("priority", 0), r[4], changes.get("magic", r[5]), *r[6:]]
                if r[0] == "safetensors" else r for r in true]

    stamps = [[p, [s[0] - 1, s[1]] if p.endswith(os.path.join("safetensors", "sniff.py")) else s]
              for p, s in kept["stamps"]]
    file.write_text(json.dumps({**kept, "stamps": stamps, "formats": forged({"magic": "ffff"})}))
    assert _sniff_fresh(cache, safetensors) == [["safetensors"], _all_families()]
    assert json.loads(file.read_text()) == kept

    file.write_text(json.dumps({**kept, "formats": forged({"priority": -1})}))  # (first, were it believed)
    assert _sniff_fresh(cache, safetensors)[0] == ["safetensors"]
    assert json.loads(file.read_text()) == kept


OLD_STYLE_CODEC = '''
from wvformats.registry import Format, register


def _no(*args, **kwargs):
    raise NotImplementedError


register(Format(name="zz-old", extensions=(".zzo",), description="a family without a sniff module", schema=None,
                sniff=lambda head: head[:4] == b"ZZOL", priority=0, parse=_no, build=_no, to_model=_no,
                from_model=_no))
'''


def test_a_family_without_a_sniff_module_is_still_asked_through_the_index(tmp_path):
    """A family with a codec and no sniff module: the index records it among those whose codec is imported to
    sniff, and a process reading the index imports that codec and tells its files."""
    families = tmp_path / "families"
    (families / "zzold").mkdir(parents=True)
    (families / "zzold" / "__init__.py").write_text("")
    (families / "zzold" / "codec.py").write_text(OLD_STYLE_CODEC)
    mine = tmp_path / "a.zzo"
    mine.write_bytes(b"ZZOL" + bytes(60))
    cache = tmp_path / "cache"
    assert _sniff_fresh(cache, mine, families=families)[0] == ["zz-old"]
    assert json.loads(_index_file(cache).read_text())["old_style"] == ["zzold"]
    assert _sniff_fresh(cache, mine, families=families) == [["zz-old"], []]  # (through the index)


SNIFF_MODULE = '''
from wvformats.registry import Sniffer

MAGIC = b"{magic}"
FORMATS = (Sniffer("zz-test", (".zz",), lambda head: head[:2] == MAGIC, priority=0, magic=MAGIC),)
'''


def test_an_edited_sniff_module_is_seen_by_the_next_process(tmp_path):
    """A family's sniff module edited between two processes (its magic changed, the file's size the same): the
    second process does not trust the index the first kept, and tells files by the module as it now is."""
    families = tmp_path / "families"
    (families / "zztest").mkdir(parents=True)
    (families / "zztest" / "__init__.py").write_text("")
    module = families / "zztest" / "sniff.py"
    module.write_text(SNIFF_MODULE.format(magic="ZZ"))
    zz, zy = tmp_path / "a.zz", tmp_path / "b.zz"
    zz.write_bytes(b"ZZ" + bytes(100))
    zy.write_bytes(b"ZY" + bytes(100))
    cache = tmp_path / "cache"
    assert _sniff_fresh(cache, zz, families=families)[0] == ["zz-test"]
    assert _sniff_fresh(cache, zz, families=families) == [["zz-test"], ["zztest"]]  # (through the index)
    before = os.stat(module)
    module.write_text(SNIFF_MODULE.format(magic="ZY"))
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # (later, whatever the clock)
    assert os.stat(module).st_size == before.st_size
    assert _sniff_fresh(cache, zy, families=families)[0] == ["zz-test"]
    assert _sniff_fresh(cache, zy, families=families) == [["zz-test"], ["zztest"]]


def _sniff_by_protobuf_fields(head):
    """The SentencePiece sniffer as it was, on the protobuf field reader: the oracle of the light one."""
    from wvformats.framework.protowire import parse_fields

    if len(head) < 4 or head[0] != 0x0A:
        return False
    try:
        fields, _, _ = parse_fields(head, 0, min(len(head), 2 + head[1] if head[1] < 0x80 else len(head)), "", 0)
    except FormatError:
        return False
    return bool(fields) and fields[0]["number"] == 1 and fields[0]["value"][:1] == b"\x0a"


@given(st.binary(max_size=8), st.integers(0, 255), st.binary(max_size=300))
def test_sentencepiece_light_sniffer_agrees_with_the_field_reader(start, length, rest):
    from wvformats.families.sentencepiece.sniff import sniff_sentencepiece

    for head in (b"\x0a" + bytes([length]) + start + rest, b"\x0a" + bytes([length]) + b"\x0a" + rest, start):
        assert sniff_sentencepiece(head) == _sniff_by_protobuf_fields(head), head


PLUGIN = '''
from wvformats import registry
from wvformats.registry import Format, register

def _no(*a, **k):
    raise NotImplementedError

register(Format(name="wvtest", extensions=(".wvt",), description="a plugin's format", schema=None,
                sniff=lambda head: head[:6] == b"WVTEST", priority=-1, parse=_no, build=_no, to_model=_no,
                from_model=_no))
glove = registry.get("glove")  # a built-in format replaced: after its codec's own registration
register(Format(**{**glove.__dict__, "description": "glove, as the plugin has it"}), replace=True)
'''


def test_plugins_still_sniff_and_replace_formats(tmp_path):
    """A plugin's format (by entry point, or WVFORMATS_PLUGINS) is sniffed by the command, even where
    the light sniffers would claim the file (priority -1 before the magic numbers), the index of declared
    sniffers kept and current; a plugin's replacement of a built-in format is the one the registry hands
    out."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "wvtestplugin.py").write_text(PLUGIN)
    mine = tmp_path / "f.wvt"
    mine.write_bytes(b"WVTEST\n1 2\nw 1 2\n")  # (also a GloVe-ish text, but the plugin's sniffer runs first)
    code = (_LOADED + "import contextlib, io\nfrom wvformats import cli, registry\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    rc = cli.main(['sniff', '--json', sys.argv[1]])\n"
            "print(json.dumps([rc, json.loads(out.getvalue()), registry.get('glove').description]))")
    cache = tmp_path / "cache"
    _sniff_fresh(cache, next(p for p in sample_files() if p.suffix == ".safetensors"))  # (the index kept)
    for how in ("entry point", "variable"):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
               "WVFORMATS_CACHE_DIR": str(cache)}
        env.pop("WVFORMATS_PLUGINS", None)
        if how == "entry point":  # what pip install of a package with a wvformats.plugins entry point leaves
            info = site / "wvtestplugin-0.1.dist-info"
            info.mkdir()
            (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wvtestplugin\nVersion: 0.1\n")
            (info / "entry_points.txt").write_text("[wvformats.plugins]\nwvtest = wvtestplugin\n")
        else:
            (info / "entry_points.txt").unlink()
            env["WVFORMATS_PLUGINS"] = "wvtestplugin"
        rc, result, description = _fresh(code, mine, env=env)
        assert rc == 0 and result == [{"path": str(mine), "format": "wvtest"}], how
        assert description == "glove, as the plugin has it", how


ROOT = Path(__file__).parents[1]  # the source folder these tests are in


def test_the_source_folder_imports_after_the_readme_install():
    """The README's test command installs in place (pip install -e): ``import wvformats`` from the source folder
    (its wvformats/ first on sys.path) then finds schemas/ as wvformats.schemas."""
    done = subprocess.run([sys.executable, "-c", "import wvformats, wvformats.schemas as s; print(s.__file__)"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == ROOT / "schemas" / "__init__.py"


def test_a_source_folder_never_installed_says_how_to_install_it():
    """No install at all (-S: no site-packages, so no in-place install either): one ImportError naming the
    command, not the bare ``No module named 'wvformats.schemas'``."""
    done = subprocess.run([sys.executable, "-S", "-c", "import wvformats"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and last.startswith("ModuleNotFoundError: No module named 'wvformats.schemas': ")
    assert f"`python3 -m pip install -e {ROOT}`" in last and "not installed" in last
