"""Start-up time of the ``wvformats`` command: ``sniff`` and ``inspect`` of a small file, beside the floor.

    python benchmarks/bench_startup.py [--repeat 9] [FILE]

Each row is the median wall time of fresh processes (interpreter start-up included), printed beside
``python -c pass`` and ``python -c "import numpy"`` so that the load of the machine can be judged. The
target (issue 20): ``wvformats sniff small.vec`` and ``inspect small.vec`` in at most 0.25 s. Measure a
non-editable install (an editable one under PYTHONDONTWRITEBYTECODE=1 compiles every module each run).
Not run in CI.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

# what the installed ``wvformats`` script runs; -P: the installed package, never a source tree in the cwd
COMMAND = [sys.executable, "-P", "-c", "import sys; from wvformats.cli import main; sys.exit(main(sys.argv[1:]))"]


def median_seconds(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", help="default: the bundled sample-fasttext.vec")
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    if args.file is None:
        from wvformats.samples import sample_dir

        args.file = str(sample_dir() / "sample-fasttext.vec")
    rows = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("python -c 'import numpy'", [sys.executable, "-c", "import numpy"]),
        ("wvformats sniff FILE", [*COMMAND, "sniff", args.file]),
        ("wvformats inspect FILE", [*COMMAND, "inspect", args.file]),
    ]
    print(f"file: {args.file}; median of {args.repeat} fresh processes\n")
    print("| command | median s |\n|---|---:|")
    for name, argv in rows:
        print(f"| {name} | {median_seconds(argv, args.repeat):.3f} |")


if __name__ == "__main__":
    main()
