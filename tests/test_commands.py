"""Families own their commands: each family's ``commands`` module adds its subcommands to ``wvformats`` (found
as its codec is), a package outside wvformats adds its own the same way, and the core (cli.py, api.py) names no
family."""

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import wvformats

ROOT = Path(wvformats.__file__).parent


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_the_core_imports_no_family():
    for name in ("cli.py", "api.py", "commands.py"):
        wrong = sorted(m for m in _imports(ROOT / name) if "families" in m)
        assert not wrong, f"{name} imports {wrong}: a family's code belongs in its package"


def test_each_family_command_lives_in_its_family():
    from wvformats import commands

    found, errors = commands.discover()
    assert not errors
    owners = {c.name: c.run.__module__ for c in found}
    assert owners == {"fasttext": "wvformats.families.fasttext.commands",
                      "gguf": "wvformats.families.ggml.commands",
                      "rwkv": "wvformats.families.ggml.commands",
                      "infinigram": "wvformats.families.infinigram.commands",
                      "sentencepiece": "wvformats.families.sentencepiece.commands"}


PLUGIN = '''
from wvformats.commands import Command, print_json


def arguments(p, subcommand):
    p.add_argument("word")
    p.add_argument("--json", action="store_true")


def run(args):
    if args.json:
        print_json({"echo": args.word})
    else:
        print(args.word[::-1])
    return 1 if args.word == "fail" else 0


COMMANDS = (Command("reverse", "print a word backwards", arguments, run),)
'''


def _wvformats(tmp_path, *args, modules="revcmd"):
    (tmp_path / "revcmd.py").write_text(textwrap.dedent(PLUGIN))
    (tmp_path / "brokencmd.py").write_text("raise RuntimeError('this plugin is broken')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "WVFORMATS_COMMANDS": modules}
    return subprocess.run([sys.executable, "-m", "wvformats.cli", *args], capture_output=True, text=True, env=env)


def test_a_plugin_adds_a_command_without_editing_the_library(tmp_path):
    r = _wvformats(tmp_path, "--help")
    assert r.returncode == 0 and "reverse" in r.stdout and "print a word backwards" in r.stdout
    r = _wvformats(tmp_path, "reverse", "abc")
    assert (r.returncode, r.stdout) == (0, "cba\n")
    r = _wvformats(tmp_path, "reverse", "abc", "--json")
    assert r.returncode == 0 and '"echo": "abc"' in r.stdout
    assert _wvformats(tmp_path, "reverse", "fail").returncode == 1  # its exit code is the program's
    assert _wvformats(tmp_path, "reverse").returncode == 2  # a usage error, as for every command


def test_a_broken_command_module_leaves_the_others_working_and_is_reported(tmp_path):
    r = _wvformats(tmp_path, "reverse", "abc", modules="brokencmd,revcmd")
    assert (r.returncode, r.stdout) == (0, "cba\n")
    r = _wvformats(tmp_path, "formats", modules="brokencmd")
    assert r.returncode == 0 and "not loaded: brokencmd: RuntimeError: this plugin is broken" in r.stderr


def _parsers(parser, path=("wvformats",)):
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def test_every_option_and_argument_of_every_command_says_what_it_is():
    """`--help` explains itself: no argument of any command or subcommand (the families' included) lacks help."""
    import argparse

    from wvformats import cli

    bare = [f"{' '.join(path)} {action.dest}" for path, parser in _parsers(cli._parser()) for action in parser._actions
            if not isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction))
            and not action.help]
    assert not bare, bare


def test_convert_to_standard_output(tmp_path):
    """`convert SRC - --to glove` writes the file to standard output, the bytes `convert SRC OUT` writes."""
    src = ROOT / "sample_files" / "sample.txt"
    out = tmp_path / "out.glove"
    assert subprocess.run([sys.executable, "-m", "wvformats.cli", "convert", str(src), str(out)]).returncode == 0
    done = subprocess.run([sys.executable, "-m", "wvformats.cli", "convert", str(src), "-", "--to", "glove"],
                          capture_output=True)
    assert done.returncode == 0 and done.stdout == out.read_bytes() and not (Path.cwd() / "-").exists()
    done = subprocess.run([sys.executable, "-m", "wvformats.cli", "convert", str(src), "-"], capture_output=True,
                          text=True)
    assert done.returncode == 2 and "needs --to" in done.stderr and not done.stdout
