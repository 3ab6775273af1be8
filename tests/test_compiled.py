"""The compiled kernels are built by the install the tests run on (the README's), and the switch to their
pure-Python twins works."""

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from wvformats import compiled


def test_every_kernel_source_is_built_and_imports():
    """Built, and under ``.ci/sanitize`` (WVFORMATS_KERNEL_DIR set) the builds from there, not the installed ones:
    every later import of a kernel gets the module compiled.kernel loaded."""
    names = compiled.sources()
    assert "wvformats.families.fasttext._kernel" in names
    assert "wvformats.families.finalfusion._kernel" in names
    assert "wvformats.families.infinigram._kernel" in names
    where = os.environ.get(compiled.KERNEL_DIR_ENV)
    for name in names:
        k = compiled.kernel(name)
        assert k is not None, name
        assert importlib.import_module(name) is k
        assert k.__file__.endswith((".so", ".pyd")), name
        if where:
            assert Path(k.__file__).is_relative_to(where), (k.__file__, where)
        source = Path(k.__file__).with_name(name.rsplit(".", 1)[1] + ".c")
        if not where and source.exists():  # (an editable install builds once: a changed source needs another)
            assert Path(k.__file__).stat().st_mtime >= source.stat().st_mtime, \
                f"{k.__file__} is older than {source.name}: run pip install -e . again to build it"


def test_the_environment_switch_gives_the_pure_python_twins():
    code = "from wvformats import compiled; print(compiled.kernel('wvformats.families.fasttext._kernel'))"
    env = {"WVFORMATS_PURE_PYTHON": "1", "PATH": ""}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"


def test_a_missing_kernel_warns_once_in_one_line():
    """Kernels not built (as an install without a C compiler leaves them; here hidden from import): the results
    are the twins', the same, and the first use warns once, in one line; WVFORMATS_PURE_PYTHON warns not."""
    from pathlib import Path

    model = Path(__file__).parent / "data" / "fasttext" / "trained" / "skipgram.bin"
    hide = ("import sys\n"
            "for k in ('fasttext', 'finalfusion'):\n"
            "    sys.modules[f'wvformats.families.{k}._kernel'] = None\n")
    run = "from wvformats import cli\nsys.exit(cli.main(sys.argv[1:]))\n"
    args = ["fasttext", "nn", str(model), "night", "nightt", "-k", "3"]
    want = subprocess.run([sys.executable, "-c", "import sys\n" + run, *args], capture_output=True, text=True,
                          check=True)
    got = subprocess.run([sys.executable, "-c", hide + run, *args], capture_output=True, text=True, check=True)
    assert got.stdout == want.stdout and want.stderr == ""
    line, = got.stderr.splitlines()
    assert re.match(r"wvformats: warning: wvformats\.families\.(fasttext|finalfusion)\._kernel is not built \(", line)
    assert "pure-Python twin" in line and "WVFORMATS_PURE_PYTHON=1" in line
    code = hide + ("import warnings\nwarnings.simplefilter('always')\n"
                   "with warnings.catch_warnings(record=True) as seen:\n"
                   "    import wvformats.families.fasttext.predict, wvformats.families.finalfusion.lookups\n"
                   "print([(w.category.__name__, len(str(w.message).splitlines())) for w in seen])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[('KernelMissingWarning', 1)]"
    env = {**os.environ, "WVFORMATS_PURE_PYTHON": "1"}
    quiet = subprocess.run([sys.executable, "-c", hide + run, *args], capture_output=True, text=True, check=True,
                           env=env)
    assert quiet.stdout == want.stdout and quiet.stderr == ""


def test_a_kernel_directory_is_loaded_instead_of_the_installed_kernels(tmp_path):
    """WVFORMATS_KERNEL_DIR (laid out as the source tree) replaces the installed builds, for the families and any
    later import; one that lacks a kernel is an ImportError, not a silent fall-back."""
    name = "wvformats.families.finalfusion._kernel"
    built = Path(importlib.import_module(name).__file__)
    (tmp_path / "wvformats" / "families" / "finalfusion").mkdir(parents=True)
    shutil.copy(built, tmp_path / "wvformats" / "families" / "finalfusion" / built.name)
    code = (f"import importlib; from wvformats.families.finalfusion import lookups; "
            f"print(lookups._K.__file__); print(importlib.import_module({name!r}).__file__)")
    env = {**os.environ, compiled.KERNEL_DIR_ENV: str(tmp_path)}
    env.pop(compiled.PURE_PYTHON_ENV, None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(tmp_path / "wvformats" / "families" / "finalfusion" / built.name)] * 2
    code = "from wvformats.families.fasttext import subwords"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "no build of wvformats.families.fasttext._kernel there" in out.stderr


def _defines(source: Path) -> dict[str, int]:
    """The integer #defines of a kernel's source (suffixes u, ull dropped)."""
    return {m[1]: int(m[2], 0) for m in re.finditer(r"^#define (\w+) (0x[0-9A-Fa-f]+|\d+)u?l?l?\b", source.read_text(),
                                                       re.MULTILINE)}


def test_the_kernels_constants_are_the_twins():
    """Each number a kernel spells (hash constants, KSUB, the sigmoid table, the vocabulary kinds) is the one its
    pure-Python twin and the schema use."""
    from wvformats.schemas.fasttext import KSUB

    from wvformats.families.fasttext import arithmetic, filerows, hashing, subwords
    from wvformats.families.finalfusion import lookups

    families = Path(__file__).parents[1] / "wvformats" / "families"
    assert _defines(families / "fasttext" / "_kernel.c") == {
        "FNV_OFFSET": hashing.FNV_OFFSET, "FNV_PRIME": hashing.FNV_PRIME, "WORD_NGRAM_PRIME": subwords.WORD_NGRAM_PRIME,
        "KSUB": KSUB, "MAX_SIGMOID": arithmetic.MAX_SIGMOID, "SIGMOID_TABLE_SIZE": arithmetic.SIGMOID_TABLE_SIZE,
        "REGION_BITS": filerows.REGION_BITS}
    assert _defines(families / "finalfusion" / "_kernel.c") == {
        "BUCKET": lookups._BUCKET, "FASTTEXT": lookups._FASTTEXT, "FNV64_OFFSET": lookups._FNV64_OFFSET,
        "FNV64_PRIME": lookups._FNV64_PRIME, "FNV64_PRIME4": lookups._FNV64_PRIME4, "FNV32_OFFSET": hashing.FNV_OFFSET,
        "FNV32_PRIME": hashing.FNV_PRIME, "PW_BLOCKSIZE": 128}  # (numpy's PW_BLOCKSIZE, loops_utils.h.src)
    from wvformats.families.infinigram import outofcore

    assert _defines(families / "infinigram" / "_kernel.c") == {
        "AUX_SIZE": outofcore.AUX_SIZE, "AUX_TAIL": outofcore.AUX_TAIL, "LCP_UNKNOWN": outofcore.LCP_UNKNOWN,
        "FIRST_READ": 64, "CACHE": 4096}  # (the sizes of the merge's corpus reads: no twin)
