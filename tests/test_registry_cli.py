"""Registry, compile policy, generated docs and the CLI."""

import json
import os
import subprocess
import sys
from pathlib import Path

import construct as cs
import numpy as np
import pytest

import wvformats as wv
from wvformats import cli, framework, registry
from wvformats.framework.docs import page
from wvformats.samples import sample_files

ROOT = Path(__file__).resolve().parent.parent


def test_every_codec_module_loads():
    registry.load()
    assert registry.LOAD_ERRORS == {}
    assert {"leader", "word2vec-binary", "word2vec-text", "glove"} <= set(wv.formats())


def _all_schemas():
    for fmt in registry.load().values():
        if fmt.schema is not None:
            yield fmt.name, fmt.schema
        yield from ((f"{fmt.name}:{k}", v) for k, v in fmt.schemas.items())


@pytest.mark.parametrize("name,schema", list(_all_schemas()), ids=lambda x: x if isinstance(x, str) else "")
def test_compile_policy(name, schema):
    """Every schema compiles, or is listed as interpreted-only with a reason."""
    if name in framework.INTERPRETED_ONLY:
        assert len(framework.INTERPRETED_ONLY[name]) > 10
        return
    assert framework.compiled(schema) is not None


def test_generated_docs_are_current():
    for name, fmt in registry.load().items():
        path = ROOT / "docs" / "formats" / f"{name}.md"
        assert path.exists(), f"run: wvformats docs docs/formats ({name} has no page)"
        assert path.read_text(encoding="utf-8") == page(fmt), f"docs/formats/{name}.md is stale"


def _types(name):
    """{field: type} of the layout table of a generated page."""
    rows = [line.split(" | ") for line in page(registry.get(name)).splitlines() if line.startswith("| ")]
    return {r[1].strip("`"): r[2] for r in rows if len(r) == 5 and r[1].startswith("`") and r[2] != "check"}


def test_generated_docs_show_types_as_people_read_them():
    """Integers and floats alike as ``u32 le`` / ``f32 le``, arrays with their dtype and shape, conditional
    fields with their condition (before: ``<Lle`` for a u32, ``NumpyArray |u1 (...)``, ``IfThenElse``)."""
    fasttext, finalfusion = _types("fasttext"), _types("finalfusion")
    assert fasttext["args.dim"] == "i32 le" and fasttext["args.t"] == "i64 le"
    assert fasttext["version"] == "if new_format: i32 le" and fasttext["magic"] == "if new_format: i32 le = 793712314"
    assert fasttext["input"] == "if quant_input == 1: Struct, else Struct"
    assert finalfusion["magic"] == "bytes[4] = b'FiFu'" and finalfusion["version"] == "u32 le = 0"
    assert finalfusion["data"] == "f32 le[rows x cols]" and finalfusion["n_chunks"] == "u32 le"
    gguf = page(registry.get("gguf"))
    assert "| u32 le |" in gguf and "| u64 le |" in gguf
    infinigram = page(registry.get("infini-gram"))
    assert "u8[_.tok_cnt x _.k]" in infinigram
    for name in wv.formats():
        text = page(registry.get(name))
        for internal in ("<L", "<l", "<Q", "|u1", "NumpyArray", "IfThenElse", "<function", "Renamed", " length='"):
            assert internal not in text, (name, internal)


def test_no_per_element_float_arrays_in_schemas():
    """Bulk data goes through NumpyArray, never Array(n, Float32l)."""
    def walk(c, seen=()):
        if id(c) in seen:
            return
        seen = (*seen, id(c))
        if isinstance(c, cs.Array) and isinstance(getattr(c, "subcon", None), cs.FormatField):
            assert c.subcon.fmtstr[-1] not in "efd", f"per-element float array in {c}"
        for attr in ("subcon", "subcons", "cases", "thensubcon", "elsesubcon"):
            sub = getattr(c, attr, None)
            if isinstance(sub, cs.Construct):
                walk(sub, seen)
            elif isinstance(sub, (list, tuple)):
                for s in sub:
                    walk(s, seen)
            elif isinstance(sub, dict):
                for s in sub.values():
                    walk(s, seen)
    for _, schema in _all_schemas():
        walk(schema)


def run(*args):
    return subprocess.run([sys.executable, "-m", "wvformats.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT)


def test_cli_help_and_exit_codes(tmp_path):
    r = run("--help")
    assert r.returncode == 0 and "validate" in r.stdout and "exit codes" in r.stdout
    assert run("no-such-command").returncode == 2
    assert run().returncode == 2
    missing = run("inspect", tmp_path / "missing")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_cli_samples_main_job():
    r = run("samples", "--json", "--words", "0")  # the timed read: tests/test_samples.py
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(r.stdout)
    assert rows and all(row["ok"] for row in rows)
    sniffed = {row["sniffed"] for row in rows}
    assert {"leader", "word2vec-binary", "word2vec-text", "glove"} <= sniffed


def test_cli_validate_inspect_dump_convert(tmp_path):
    import numpy as np

    src = tmp_path / "a.leader"
    wv.write(wv.Embeddings(["x", "y"], np.ones((2, 2))), src)
    r = run("validate", "--json", src)
    assert r.returncode == 0 and json.loads(r.stdout)[0]["ok"] is True
    bad = tmp_path / "bad.leader"
    bad.write_bytes(src.read_bytes()[:-3])
    r = run("validate", bad)
    assert r.returncode == 1 and "records[1]" in r.stdout
    r = run("inspect", "--full", "--json", src)
    info = json.loads(r.stdout)
    assert info["format"] == "leader" and info["words"] == 2 and info["parts"][3]["offset"] == 24
    r = run("dump", src)
    assert r.returncode == 0 and "magic = 38941" in r.stdout and "records =" in r.stdout
    dst = tmp_path / "b.txt"
    assert run("convert", src, dst).returncode == 0
    again = run("convert", src, dst)
    assert again.returncode == 2 and "exists" in again.stderr
    assert run("convert", src, dst, "--force", "--to", "glove").returncode == 0
    assert wv.sniff(dst) == "glove"
    r = run("inspect", bad)
    assert r.returncode == 2 and "leader" in r.stderr and "at byte" in r.stderr and "Traceback" not in r.stderr


def test_cli_main_in_process(capsys):
    assert cli.main(["formats"]) == 0
    assert "leader" in capsys.readouterr().out


def test_progress_bars_show_only_on_a_terminal(monkeypatch):
    from tqdm import tqdm

    from wvformats import progress

    items = [1, 2, 3]
    assert progress.iterate(items, True) is items  # stderr is not a terminal under pytest
    assert not isinstance(progress.bar(True, total=3), tqdm)
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    wrapped = progress.iterate(items, True, desc="x")
    assert isinstance(wrapped, tqdm) and list(wrapped) == items
    assert progress.iterate(items, False) is items  # --quiet
    b = progress.bar(True, total=3)
    assert isinstance(b, tqdm)
    b.close()


@pytest.mark.parametrize("fmt", ["leader", "word2vec-binary", "glove", "word2vec-text", "finalfusion"])
def test_write_reports_how_the_file_grows(tmp_path, fmt):
    """``progress`` hears of every byte once, in positive steps, also where the builder seeks back to patch
    a length (finalfusion's chunks), and the file is the one written without it."""
    import numpy as np

    emb = wv.Embeddings([f"w{i}" for i in range(300)], np.arange(1200, dtype="<f4").reshape(300, 4) / 7)
    steps: list[int] = []
    raw = {"normalize": False} if fmt == "finalfusion" else {}  # (the rows as they are: no warning)
    wv.write(emb, tmp_path / "with", fmt, progress=steps.append, **raw)
    wv.write(emb, tmp_path / "without", fmt, **raw)
    size = (tmp_path / "with").stat().st_size
    assert (tmp_path / "with").read_bytes() == (tmp_path / "without").read_bytes()
    assert sum(steps) == size and all(s > 0 for s in steps)


def test_convert_counts_the_bytes_written_on_a_terminal(tmp_path, monkeypatch, capsys):
    import numpy as np
    from tqdm import tqdm

    src, dst = tmp_path / "a.leader", tmp_path / "b.txt"
    wv.write(wv.Embeddings([f"w{i}" for i in range(500)], np.ones((500, 3))), src)
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    assert cli.main(["convert", str(src), str(dst), "--to", "glove"]) == 0
    shown = capsys.readouterr().err
    # reading: the input's size as the total, then the read's rate; writing: the bytes written and their rate
    size = tqdm.format_sizeof(src.stat().st_size, "B")
    assert f"reading {src} ({size}): " in shown and f"reading {src}: {size} in " in shown and "B/s" in shown
    assert "0.00B" not in shown.split("writing")[0]  # (no count of bytes read it cannot know)
    assert f"writing {dst}: " in shown and tqdm.format_sizeof(dst.stat().st_size, "B") in shown
    assert cli.main(["--quiet", "convert", str(src), str(tmp_path / "c.txt"), "--to", "glove"]) == 0
    assert capsys.readouterr().err == ""


def _tiny(tmp_path, name="e.leader"):
    p = tmp_path / name
    wv.write(wv.Embeddings(["a", "b", "c"], [[1, 2], [3, 4], [5, 6]]), p)
    return p


def test_read_options_are_checked(tmp_path):
    p = _tiny(tmp_path)
    for bad in ({"limit": -1}, {"limit": 2.5}, {"limit": "3"}, {"limit": True}, {"vocab": "cat"}, {"vocab": 5},
                {"unicode_errors": "bogus"}):
        with pytest.raises(ValueError):
            wv.read(p, **bad)
    with pytest.raises(TypeError, match="limt"):
        wv.read(p, limt=3)
    with pytest.raises(TypeError, match="unicode_errors"):  # finalfusion words are always strict UTF-8
        wv.read(ROOT / "wvformats/sample_files/sample-simple.fifu", unicode_errors="replace")
    assert wv.read(p, limit=0).words == [] and wv.read(p, vocab=iter(["c", "a"])).words == ["a", "c"]
    assert wv.read(p, limit=np.int64(1)).words == ["a"]  # (numpy's integers are whole numbers)
    assert cli.main(["convert", str(p), str(tmp_path / "x.txt"), "--limit", "-1"]) == 2
    assert not (tmp_path / "x.txt").exists()


def test_write_options_the_format_does_not_take_are_refused(tmp_path):
    emb = wv.read(_tiny(tmp_path))
    with pytest.raises(TypeError, match="newline"):
        wv.write(emb, tmp_path / "x.glove", newline=True)
    with pytest.raises(TypeError, match="style"):
        wv.convert(tmp_path / "e.leader", tmp_path / "y.leader", style="g5")
    assert not (tmp_path / "x.glove").exists() and not (tmp_path / "y.leader").exists()
    wv.write(emb, tmp_path / "z.bin", newline=True)
    assert (tmp_path / "z.bin").read_bytes().endswith(b"\n")
    # on the command line an option the output format does not take is a usage error, in one line
    args = ["convert", str(tmp_path / "e.leader"), str(tmp_path / "w.fifu"), "--to", "finalfusion", "--style", "g5"]
    assert cli.main(args) == 2 and not (tmp_path / "w.fifu").exists()


def test_convert_checks_the_output_folder_before_reading(tmp_path, monkeypatch):
    p = _tiny(tmp_path)
    monkeypatch.setattr(wv.api, "read", lambda *a, **k: pytest.fail("read before the folder was checked"))
    with pytest.raises(FileNotFoundError, match="folder .*missing does not exist"):
        wv.convert(p, tmp_path / "missing" / "out.txt")
    monkeypatch.undo()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        wv.write(wv.read(p), tmp_path / "missing" / "out.txt")


def test_convert_to_an_empty_glove_file_reports_success(tmp_path, capsys):
    """0 words: the output is an empty file (GloVe has no header), which no sniffer can recognise; the
    command must report the format it wrote, not sniff its output."""
    p = _tiny(tmp_path)
    assert cli.main(["convert", str(p), str(tmp_path / "e.glove"), "--limit", "0"]) == 0
    assert (tmp_path / "e.glove").read_bytes() == b""
    assert "[glove]" in capsys.readouterr().out


def test_debug_and_quiet_also_after_the_command(tmp_path, capsys):
    bad = tmp_path / "bad.leader"
    bad.write_bytes(b"\x1d\x98" + b"\0" * 6 + b"\xff" * 8)
    assert cli.main(["inspect", str(bad), "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err
    assert cli.main(["inspect", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith(f"wvformats: error: {bad}: leader")
    assert cli.main(["validate", str(_tiny(tmp_path)), "-q"]) == 0


def test_sigterm_during_convert_leaves_no_temporary_file(tmp_path):
    """A real SIGTERM delivered once the output is written but not yet renamed (at its fsync): exit 143,
    nothing left in the folder."""
    src = _tiny(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    code = f"""
import os, signal, sys
from wvformats import cli
def fsync(fd):
    os.kill(os.getpid(), signal.SIGTERM)
os.fsync = fsync
sys.exit(cli.main(["convert", {str(src)!r}, {str(out / 'e.txt')!r}]))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 143, run.stderr
    assert list(out.iterdir()) == []


def test_validate_tells_input_errors_from_failed_checks(tmp_path, capsys):
    """Exit 2 when a file cannot be checked at all (missing, empty, of no known format), 1 when it was
    checked and is not byte-exact; a header count short of the file names the extra bytes."""
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "more.txt").write_bytes(b"1 2\na 1 2\nb 3 4\n")
    assert cli.main(["validate", str(tmp_path / "missing")]) == 2
    assert cli.main(["validate", str(tmp_path / "empty")]) == 2
    assert "is empty" in capsys.readouterr().out
    assert cli.main(["validate", str(tmp_path / "more.txt")]) == 1
    out = capsys.readouterr().out
    assert "6 bytes after the declared records" in out and "None" not in out
    assert cli.main(["sniff", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert err.count(str(tmp_path / "empty")) == 1 and "is empty" in err


def test_paths_of_the_wrong_kind_are_input_errors(tmp_path, capsys):
    """A file given as a folder format, a folder given as a file format, a FIFO (whose open would block
    until a writer comes): refused before opening, as input errors (validate: unreadable, exit 2)."""
    import os

    from wvformats.samples import sample_files

    samples = {p.name: p for p in sample_files()}
    leader, index = samples["sample.leader"], samples["sample-index"]
    for path, fmt, says in ((leader, "infini-gram", "is a file"), (index, "leader", "is a directory")):
        report = wv.validate(path, fmt)
        assert not report.ok and report.unreadable and says in report.error
        for call in (wv.inspect, wv.read):
            with pytest.raises(wv.FormatError, match=says):
                call(path, fmt)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for command in (["sniff"], ["validate"], ["inspect"], ["inspect", "--format", "leader"], ["dump"],
                    ["dump", "--format", "glove"], ["validate", "--format", "glove"]):
        assert cli.main([*command, str(fifo)]) == 2, command
        said = capsys.readouterr()
        assert "not a regular file" in said.err + said.out
    with pytest.raises(wv.FormatError, match="not a regular file"):
        wv.read(fifo, "leader")


def test_infinigram_count_refuses_ids_the_index_cannot_hold(capsys):
    index = ROOT / "wvformats/sample_files/sample-index"
    for ids in (["70000"], ["--", "-1"]):
        assert cli.main(["infinigram", "count", str(index), *ids]) == 2
        err = capsys.readouterr().err
        assert "does not fit this index's 1-byte tokens" in err and "Traceback" not in err
    with pytest.raises(ValueError):
        wv.read(index).count([256])
    assert wv.read(index).count([104]) == wv.read(index).count([np.uint8(104)]) > 0


@pytest.mark.parametrize("path", [p for p in sample_files() if p.is_file()], ids=lambda p: p.name)
def test_dump_fields_tile_every_sample(path, capsys):
    """The annotated dump's fields cover each sample from byte 0 to its end, each byte in exactly one field
    (headers of text formats, every finalfusion chunk's id, length and body fields, every rwkv record's
    header fields, key and data included)."""
    from wvformats.fileio import open_buffer
    from wvformats.framework.walk import leaves, walk

    fmt = registry.get(wv.sniff(path))
    if fmt.schema is None:  # (an .npz: its zip is read by zipfile) dump says it has no fields to show
        assert cli.main(["dump", str(path)]) == 2
        assert "has no fields to dump" in capsys.readouterr().err
        return
    data = open_buffer(path)
    _, spans = walk(fmt.schema, data, format=fmt.name)
    at = 0
    for s in leaves(spans):
        assert s.start == at and s.end >= s.start, (s.path, s.start, at)
        at = s.end
    assert at == len(data)
    assert cli.main(["dump", "--all", str(path)]) == 0  # --all: no array elided, a line pair per field
    out = capsys.readouterr().out
    assert out.count("\n          ") == len(leaves(spans))
    if fmt.name == "finalfusion":
        assert "chunks[1].chunk_id" in out and ".body." in out
    if fmt.name == "rwkv":
        assert "records[0].key = 'emb.weight'" in out


def test_inspect_prints_tables_a_row_per_line(capsys):
    path = ROOT / "wvformats/sample_files/sample-rwkv-q5_1.bin"
    assert cli.main(["inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("tensor_table:")
    rows = [x for x in lines[at + 1 :] if x.startswith("  name=")]
    assert len(rows) == wv.inspect(path)["tensors"] == 24
    assert rows[0] == "  name=emb.weight, dtype=FP16, shape=[16, 32], offset=54, bytes=1024"


def test_a_plugin_that_fails_to_load_is_named_where_a_format_is_not_found(tmp_path):
    """A broken plugin (or codec) does not take the others down, and an error saying that no format fits
    names it: the file may be in that plugin's format."""
    junk = tmp_path / "junk.xyz"
    junk.write_bytes(b"\x00\x01 not any format \xff" * 4)
    env = {**os.environ, "WVFORMATS_PLUGINS": "wvf_no_such_plugin"}
    sample = next(p for p in sample_files() if p.name == "sample-simple.fifu")
    ok = subprocess.run([sys.executable, "-m", "wvformats.cli", "sniff", str(sample)], capture_output=True,
                        text=True, env=env)
    assert ok.returncode == 0 and ok.stdout.strip().endswith("finalfusion")
    assert "wvf_no_such_plugin" in ok.stderr  # warned once
    for args in (["sniff", junk], ["inspect", junk, "--format", "nope"], ["convert", sample, tmp_path / "o.xyz"]):
        r = subprocess.run([sys.executable, "-m", "wvformats.cli", *map(str, args)], capture_output=True,
                           text=True, env=env)
        assert r.returncode == 2, args
        assert "failed to load: wvf_no_such_plugin (ModuleNotFoundError" in r.stderr, (args, r.stderr)


def test_write_chooses_among_formats_sharing_an_extension_by_the_object(tmp_path, capsys):
    """.bin is both word2vec binary and rwkv.cpp: wv.write(rwkv_model, "model.bin") was taken as word2vec
    ("expected Embeddings or (words, vectors), got RwkvModel"). The object's type decides, in write and in
    convert; an object that cannot be written as the format asked (format=, --to, or the only format of an
    extension) gets a BuildError naming the formats it can be written as, and nothing is written."""
    samples = {p.name: p for p in sample_files()}
    rwkv_file, w2v_file = samples["sample-rwkv-q5_1.bin"], samples["sample.bin"]
    rwkv, emb = wv.read(rwkv_file), wv.read(w2v_file)
    wv.write(rwkv, tmp_path / "model.bin")
    assert (tmp_path / "model.bin").read_bytes() == rwkv_file.read_bytes()
    wv.write(emb, tmp_path / "vectors.bin")
    wv.write((emb.words, emb.vectors), tmp_path / "pair.bin")
    assert wv.sniff(tmp_path / "vectors.bin") == wv.sniff(tmp_path / "pair.bin") == "word2vec-binary"
    for name, fmt in (("m.txt", None), ("m.fifu", None), ("m.bin", "word2vec-binary"), ("m.model", None)):
        with pytest.raises(wv.BuildError, match="RwkvModel can be written as: rwkv$") as e:
            wv.write(rwkv, tmp_path / name, fmt)
        assert e.value.format == (fmt or registry.by_extension(Path(name).suffix)[0].name)
        assert f"cannot write a RwkvModel as {e.value.format};" in str(e.value)
        assert not (tmp_path / name).exists()
    with pytest.raises(wv.BuildError, match="Embeddings can be written as: fasttext, finalfusion, glove, leader, "
                                            "npz-embeddings, word2vec-binary, word2vec-text$"):
        wv.write(emb, tmp_path / "e.bin", "rwkv")
    with pytest.raises(wv.BuildError, match="cannot write a dict as fasttext or rwkv or word2vec-binary; a dict can be "
                                            "written as no format"):
        wv.write({}, tmp_path / "d.bin")
    # the command line: convert picks the output format once the input is read
    assert cli.main(["convert", str(rwkv_file), str(tmp_path / "c.bin")]) == 0
    assert (tmp_path / "c.bin").read_bytes() == rwkv_file.read_bytes()
    assert cli.main(["convert", str(w2v_file), str(tmp_path / "w.bin")]) == 0
    assert wv.sniff(tmp_path / "w.bin") == "word2vec-binary"
    capsys.readouterr()
    for dst, to in (("c.txt", []), ("d.bin", ["--to", "word2vec-binary"])):
        assert cli.main(["convert", str(rwkv_file), str(tmp_path / dst), *to]) == 2
        err = capsys.readouterr().err
        assert "is a rwkv file (RwkvModel); `wvformats rwkv quantize" in err and "Traceback" not in err
        assert not (tmp_path / dst).exists()


# -- plugins: docs/extending.md's worked format, run as written -----------------------------------------------

EXTENDING = ROOT / "docs" / "extending.md"
_LOADED_HEAVY = ("import json, sys\n"
                 "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'construct'))\n")


def _section(title):
    """The text of docs/extending.md from the heading ``## title`` to the next heading of that level."""
    text = EXTENDING.read_text(encoding="utf-8")
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _named_blocks(text):
    """The page's code blocks: {file name: code} for those introduced by "`name.py`:", and the others in order."""
    import re

    named = dict(re.findall(r"`(\w+\.py)`[^\n]*:\n\n```python\n(.*?)```", text, re.S))
    rest = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if b not in named.values()]
    return named, rest


def _plugin_site(tmp_path, modules, entry_points):
    """A folder on PYTHONPATH holding ``modules`` and the dist-info that pip would leave for a package with
    these ``wvformats.plugins`` entry points; the environment of a process that sees it."""
    site = tmp_path / "site"
    site.mkdir()
    for name, code in modules.items():
        (site / name).write_text(code, encoding="utf-8")
    info = site / "wvplugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wvplugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[wvformats.plugins]\n" + "".join(f"{k} = {v}\n"
                                                                          for k, v in entry_points.items()))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env.pop("WVFORMATS_PLUGINS", None)
    return env


def _run(tmp_path, env, *args):
    out = subprocess.run([sys.executable, *map(str, args)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_extending_page_worked_format_runs_as_a_plugin(tmp_path):
    """The plugin format of docs/extending.md, its blocks as written: installed with its entry point, the
    usage block runs with no import of the plugin, the commands serve its files, and sniffing them (and
    any other file) imports neither numpy nor construct: the entry point is the stdlib declaration."""
    named, (usage,) = _named_blocks(_section("A new format as a plugin"))
    assert set(named) == {"wvmini_sniff.py", "wvmini.py"}
    assert 'wvmini = "wvmini_sniff"' in _section("A new format as a plugin")
    env = _plugin_site(tmp_path, named, {"wvmini": "wvmini_sniff"})
    _run(tmp_path, env, "-c", usage)
    sample = next(p for p in sample_files() if p.name == "sample.txt")
    rc, said, heavy = json.loads(_run(tmp_path, env, "-c", _LOADED_HEAVY.replace("heavy =", "before =") +
                                      "import contextlib, io\nfrom wvformats import cli\n"
                                      "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
                                      "    rc = cli.main(['sniff', 'e.wvmi', sys.argv[1]])\n" + _LOADED_HEAVY +
                                      "print(json.dumps([rc, out.getvalue(), heavy]))", sample))
    assert rc == 0 and said == f"e.wvmi: wvmini\n{sample}: word2vec-text\n" and heavy == []
    cli_ = ("-m", "wvformats.cli")
    info = json.loads(_run(tmp_path, env, *cli_, "inspect", "--json", "e.wvmi"))
    assert (info["format"], info["words"], info["dim"], info["first_words"]) == ("wvmini", 3, 2, ["king", "queen", "man"])
    assert "vectors = ndarray <f4 (3, 2)    # row-major f32 matrix, a row per word" in _run(tmp_path, env, *cli_, "dump", "e.wvmi")
    assert "bytes rebuilt byte-identical" in _run(tmp_path, env, *cli_, "validate", "e.wvmi")
    _run(tmp_path, env, *cli_, "convert", "e.wvmi", "e.txt")
    assert (tmp_path / "e.txt").read_text().splitlines()[:2] == ["3 2", "king 0.0 1.0"]
    rows = json.loads(_run(tmp_path, env, *cli_, "formats", "--json"))
    assert "wvmini" in next(r for r in rows if r["name"] == "glove")["convert_to"]


def test_a_plugin_chunk_type_builds_without_importing_the_plugin(tmp_path):
    """docs/extending.md's chunk plugin, installed: its usage block without its ``import wvfreq`` builds a file
    with chunk 100 through the finalfusion codec alone (before: an unchecked-input BuildError, since the
    plugin was loaded only when the registry was consulted, never before a codec's build)."""
    named, (usage,) = _named_blocks(_section("A new finalfusion chunk type"))
    assert "import wvfreq" in usage
    env = _plugin_site(tmp_path, named, {"wvfreq": "wvfreq"})
    _run(tmp_path, env, "-c", usage.replace("import wvfreq  # noqa: F401 - registers chunk 100\n", ""))
    counts = _run(tmp_path, env, "-c", "import wvformats as wv\n"
                  "print(wv.parse_file('f.fifu').chunks[2].body.counts.tolist())")
    assert counts.strip() == "[7, 9]"


def test_extending_page_documents_every_format_field():
    """The Format contract table of docs/extending.md has a row for every field of Format, in its order."""
    import dataclasses
    import re

    documented = re.findall(r"^\| `(\w+)` \|", _section("The `Format` contract"), re.M)
    assert documented == [f.name for f in dataclasses.fields(registry.Format)]
