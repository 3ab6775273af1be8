"""safetensors and NumPy .npy: wvformats vs the safetensors library and numpy, in one run.

    python3 benchmarks/bench_tensors.py [--mb 1024] [--repeat 3] [--gguf-mb 256] [--members 2000]

Files are written once to benchmarks/data/ (by safetensors.numpy.save_file, numpy.save and gguf-py). Each row
is a fresh process with its imports done in the setup and the file read through once (warm cache); the rows
take turns, and the ratio is the median of the per-turn ratios.

1. Open a safetensors file of ``--mb`` MB (16 F32 tensors) and sum one tensor: wv.read(...)[name] vs
   safetensors.safe_open(...).get_tensor(name) (numpy framework).
2. Load every tensor into memory: wv.read(path, mmap=False) vs safetensors.numpy.load_file(path).
3. Open a .npy of ``--mb`` MB and read its shape and first row: wv.read vs numpy.load(mmap_mode="r").
4. GGUF (``--gguf-mb`` MB of Q8_0, written by gguf-py) to safetensors F32: wv.convert vs gguf-py's reader,
   gguf.quants.dequantize and safetensors.numpy.save_file.
5. Open an .npz (numpy.savez: stored) holding the ``--mb`` MB matrix and a small array, and read the matrix's
   first row: wv.read (the member a view of the mapped archive) vs numpy.load (which reads the member into
   memory: numpy.load's mmap_mode does not reach into an .npz).
6. Open an .npz (numpy.savez) of ``--members`` small arrays (8 x 8 f32, as a checkpoint of many layers) and
   take every array: wv.read vs numpy.load and a read of each member (the zip records of each member, its
   local header and its directory entry, and each .npy header parsed).
7. ``fresh``: what a script pays to open a file (issue 39): the whole process timed from outside (interpreter,
   imports, open, and the work), the file read through just before. A 1 GiB safetensors file of 64 tensors
   of 16 MiB, one tensor summed: ``import wvformats`` + ``wv.read(p)[name]`` vs ``safe_open`` +
   ``get_tensor``; a 256 MiB .npy mapped and every page summed: ``wv.read`` vs
   ``numpy.load(mmap_mode="r")``. Each process also reports the time after ``import numpy`` (the imports of
   wvformats or safetensors and the read).

The package is byte-compiled first (as a wheel installs it): under PYTHONDONTWRITEBYTECODE an editable
install would otherwise compile every module in every process. Before the ``fresh`` turns one process reads each
file, which caches the safetensors and .npy schemas' plans (framework/plans.py) and the index of the families'
declared sniffers (registry.py), as any first read does.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import floor_read, measure_turns, summary, table, warm  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
TENSORS = 16


def make_npz(npy: Path) -> Path:
    """numpy.savez of the .npy's matrix and a small array (stored members)."""
    npz = npy.with_suffix(".npz")
    if not npz.exists():
        np.savez(npz, matrix=np.load(npy, mmap_mode="r"), words=np.array(["a", "b"]))
    return npz


def make_many(members: int) -> Path:
    """numpy.savez of ``members`` arrays of 8 x 8 f32."""
    npz = DATA / f"bench-{members}-members.npz"
    if not npz.exists():
        DATA.mkdir(exist_ok=True)
        rng = np.random.default_rng(2)
        np.savez(npz, **{f"layer{i}.weight": rng.standard_normal((8, 8)).astype(np.float32) for i in range(members)})
    return npz


def make_files(mb: int, gguf_mb: int) -> tuple[Path, Path, Path]:
    DATA.mkdir(exist_ok=True)
    st, npy, gg = DATA / f"bench-{mb}mb.safetensors", DATA / f"bench-{mb}mb.npy", DATA / f"bench-q8-{gguf_mb}mb.gguf"
    rows = mb * (1 << 20) // (TENSORS * 4 * 1024)
    if not st.exists():
        from safetensors.numpy import save_file

        rng = np.random.default_rng(0)
        save_file({f"layer.{i}.weight": rng.standard_normal((rows, 1024), np.float32) for i in range(TENSORS)}, st)
    if not npy.exists():
        np.save(npy, np.random.default_rng(1).standard_normal((rows * TENSORS, 1024), np.float32))
    if not gg.exists():
        import gguf
        from gguf import quants as gq

        w = gguf.GGUFWriter(str(gg), "llama")
        per = gguf_mb * (1 << 20) // 8 // 34 * 32  # values per tensor (Q8_0: 34 bytes per 32 values)
        rng = np.random.default_rng(2)
        for i in range(8):
            values = rng.standard_normal((per // 4096, 4096), np.float32)
            w.add_tensor(f"blk.{i}.weight", gq.quantize(values, gguf.GGMLQuantizationType.Q8_0),
                         raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    return st, npy, gg


def make_sized(mb: int, tensors: int) -> Path:
    """A safetensors file of ``mb`` MiB in ``tensors`` F32 tensors (safetensors.numpy.save_file)."""
    path = DATA / f"bench-{mb}mb-{tensors}t.safetensors"
    if not path.exists():
        from safetensors.numpy import save_file

        DATA.mkdir(exist_ok=True)
        rows = mb * (1 << 20) // (tensors * 4 * 1024)
        rng = np.random.default_rng(3)
        save_file({f"layer.{i}.weight": rng.standard_normal((rows, 1024), np.float32) for i in range(tensors)}, path)
    return path


def make_npy(mb: int) -> Path:
    path = DATA / f"bench-{mb}mb.npy"
    if not path.exists():
        DATA.mkdir(exist_ok=True)
        np.save(path, np.random.default_rng(1).standard_normal((mb * (1 << 20) // 4096, 1024), np.float32))
    return path


# the child of a ``fresh`` row: its code runs after this, and prints when ``import numpy`` was done
_FRESH = "import time\n_t = time.perf_counter()\nimport numpy as np\n_i = time.perf_counter()\n{code}\n" \
         "print(time.perf_counter() - _i)"


def fresh_turns(rows: list[tuple[str, str, str]], repeat: int) -> dict[str, list[tuple[float, float]]]:
    """(whole process seconds, seconds after ``import numpy``) of each row (name, file, code) per turn, the
    rows in turn; the file read through (64 KB at a time) just before each process."""
    out: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in rows}
    for _ in range(repeat):
        for name, path, code in rows:
            with open(path, "rb", buffering=0) as f:
                buf = bytearray(1 << 16)
                while f.readinto(buf):
                    pass
            t0 = time.perf_counter()
            got = subprocess.run([sys.executable, "-P", "-c", _FRESH.format(code=code)], capture_output=True,
                                 text=True, check=True)
            out[name].append((time.perf_counter() - t0, float(got.stdout.split()[-1])))
    return out


def fresh_table(title: str, turns: dict[str, list[tuple[float, float]]], base: str) -> str:
    lines = [f"### {title}", "", f"| row | process s | after import numpy s | x {base} (paired) | target |",
             "|---|---|---|---|---|"]
    for name, runs in turns.items():
        ratio = statistics.median(a[0] / b[0] for a, b in zip(runs, turns[base], strict=True))
        target = TARGETS.get(name, "")
        lines.append(f"| {name} | {statistics.median(r[0] for r in runs):.3f} | "
                     f"{statistics.median(r[1] for r in runs):.3f} | {ratio:.2f} | {target} |")
    return "\n".join(lines) + "\n"


TARGETS = {"wvformats: read + [name] + sum": "<= 1.0", "wvformats: read + sum of every page": "<= 1.2"}


def fresh(repeat: int) -> None:
    """The ``fresh`` tables: the whole process, imports and all (issue 39's open targets)."""
    st, npy, name = str(make_sized(1024, 64)), str(make_npy(256)), "layer.7.weight"
    # the schemas' plans and the sniffers' index derived and cached, as the first read after an install does
    subprocess.run([sys.executable, "-P", "-c", f"import wvformats as wv\nwv.read({st!r})\nwv.read({npy!r})"],
                   check=True)
    turns = fresh_turns([
        ("safe_open + get_tensor + sum", st, f"from safetensors import safe_open\nwith safe_open({st!r}, 'np') as f:\n"
         f"    total = float(f.get_tensor({name!r}).sum())"),
        ("wvformats: read + [name] + sum", st, f"import wvformats as wv\ntotal = float(wv.read({st!r})[{name!r}].sum())"),
    ], repeat)
    print(fresh_table("A fresh process: open a 1 GiB safetensors file (64 x 16 MiB) and sum one tensor", turns,
                      "safe_open + get_tensor + sum"), flush=True)
    turns = fresh_turns([
        ("numpy.load(mmap_mode='r') + sum", npy, f"a = np.load({npy!r}, mmap_mode='r')\ntotal = float(a.sum())"),
        ("wvformats: read + sum of every page", npy, f"import wvformats as wv\ntotal = float(wv.read({npy!r}).sum())"),
    ], repeat)
    print(fresh_table("A fresh process: map a 256 MiB .npy and sum every page", turns,
                      "numpy.load(mmap_mode='r') + sum"), flush=True)


def byte_compile() -> None:
    """The installed wvformats byte-compiled, as a wheel's install leaves it (quietly; once)."""
    out = subprocess.run([sys.executable, "-P", "-c", "import json, wvformats, wvformats.schemas\n"
                          "print(json.dumps([wvformats.__path__[0], wvformats.schemas.__path__[0]]))"],
                         capture_output=True, text=True, check=True)
    for folder in json.loads(out.stdout):
        compileall.compile_dir(folder, quiet=1)


def run(rows: list[tuple[str, str, str]], title: str, base: str, repeat: int) -> None:
    turns = measure_turns(rows, repeat)
    print(table(title, [(name, summary(turns[name])) for name, _, _ in rows], base, turns), flush=True)


def tables(st: Path, npy: Path, gg: Path, many: Path,
           members: int) -> dict[str, tuple[list[tuple[str, str, str]], str, str]]:
    """Each table's rows (name, setup, timed), title and base row, by the name ``--only`` takes."""
    s, n, g, m, name = str(st), str(npy), str(gg), str(many), "layer.7.weight"
    z = str(make_npz(npy))
    out = str(DATA / "converted.safetensors")
    wv = "import numpy as np\nimport wvformats as wv\nwv.formats()\n"
    safe_open = "safetensors.safe_open + get_tensor + sum"
    return {
        "open": ([(safe_open, f"import numpy as np\nfrom safetensors import safe_open\n{warm(s)}",
                   f"with safe_open({s!r}, 'np') as f:\n    total = float(f.get_tensor({name!r}).sum())"),
                  ("wvformats: read + [name] + sum", f"{wv}{warm(s)}",
                   f"total = float(wv.read({s!r})[{name!r}].sum())")],
                 f"Open a {st.stat().st_size / 1e6:.0f} MB safetensors file and sum one tensor", safe_open),
        "load": ([("raw read (floor)", *floor_read(s)),
                  ("safetensors.numpy.load_file", f"from safetensors.numpy import load_file\n{warm(s)}",
                   f"tensors = load_file({s!r})"),
                  ("wvformats: read(mmap=False)", f"{wv}{warm(s)}", f"tensors = dict(wv.read({s!r}, mmap=False))")],
                 "Load every tensor into memory", "safetensors.numpy.load_file"),
        "npy": ([("numpy.load(mmap_mode='r')", f"import numpy as np\n{warm(n)}",
                  f"a = np.load({n!r}, mmap_mode='r')\nshape, row = a.shape, float(a[0].sum())"),
                 ("wvformats: read", f"{wv}{warm(n)}", f"a = wv.read({n!r})\nshape, row = a.shape, float(a[0].sum())")],
                f"Open a {npy.stat().st_size / 1e6:.0f} MB .npy and read its first row", "numpy.load(mmap_mode='r')"),
        "gguf": ([("gguf-py dequantize + safetensors save_file",
                   "import gguf, numpy as np\nfrom gguf import quants as gq\nfrom safetensors.numpy import save_file\n"
                   f"{warm(g)}",
                   f"r = gguf.GGUFReader({g!r})\nsave_file({{t.name: gq.dequantize(t.data, t.tensor_type).reshape("
                   f"[int(d) for d in reversed(t.shape)]) for t in r.tensors}}, {out!r})"),
                  ("wvformats: convert", f"{wv}{warm(g)}", f"wv.convert({g!r}, {out!r}, overwrite=True)")],
                 f"GGUF ({gg.stat().st_size / 1e6:.0f} MB of Q8_0) to safetensors F32",
                 "gguf-py dequantize + safetensors save_file"),
        "npz": ([("numpy.load(npz)['matrix']", f"import numpy as np\n{warm(z)}",
                  f"with np.load({z!r}) as f:\n    a = f['matrix']\nshape, row = a.shape, float(a[0].sum())"),
                 ("wvformats: read(mmap=True)['matrix']", f"{wv}{warm(z)}",
                  f"a = wv.read({z!r}, mmap=True)['matrix']\nshape, row = a.shape, float(a[0].sum())")],
                f"Open an .npz (stored) of {npy.stat().st_size / 1e6:.0f} MB and read its matrix's first row",
                "numpy.load(npz)['matrix']"),
        "many": ([("numpy.load + every member", f"import numpy as np\n{warm(m)}",
                   f"with np.load({m!r}) as f:\n    arrays = {{k: f[k] for k in f.files}}"),
                  ("wvformats: read", f"{wv}{warm(m)}", f"arrays = dict(wv.read({m!r}))")],
                 f"Open an .npz (numpy.savez) of {members} arrays of 8 x 8 f32 and take every array",
                 "numpy.load + every member"),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=int, default=1024)
    p.add_argument("--gguf-mb", type=int, default=256)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--members", type=int, default=2000)
    p.add_argument("--only", choices=["open", "load", "npy", "gguf", "npz", "many", "fresh"], action="append",
                   help="run only this table (repeat the option for several)")
    args = p.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs\n", flush=True)
    byte_compile()
    if args.only is None or "fresh" in args.only:
        fresh(args.repeat)
    if args.only == ["fresh"]:
        print(f"load: {os.getloadavg()[0]:.2f} (1 min)")
        return
    files = (*make_files(args.mb, args.gguf_mb), make_many(args.members), args.members)
    for key, (rows, title, base) in tables(*files).items():
        if args.only is None or key in args.only:
            run(rows, title, base, args.repeat)
    print(f"load: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
