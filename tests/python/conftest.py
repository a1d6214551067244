"""What the tests of the installed memreplay package share (run by tools/test_python.sh in a venv
with the package installed): the real traces, the installed CLI, traces imported once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import memreplay

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
REAL = Path(os.environ.get("MEMREPLAY_REAL_DATA_DIR", REPO / "tests" / "data" / "real"))
TRACES = REAL / "traces"

# test_torch_format.py checks the package against the recording library installed with it.
os.environ.setdefault("MEMREPLAY_RECORD_LIB",
                      str(Path(memreplay.__file__).resolve().parent / "lib" / "libmemreplay_record.so"))


def real_trace(name: str) -> Path:
    """tests/data/real/traces/NAME.pickle.xz; missing data fails the test, never skips it."""
    path = TRACES / f"{name}.pickle.xz"
    if not path.is_file():
        pytest.fail(f"{path}: the real test data is missing")
    return path


def cli() -> str:
    """The `memreplay` program this package installed (on PATH in the venv)."""
    program = shutil.which("memreplay")
    if program is None:
        pytest.fail("no memreplay on PATH: the package's console script is not installed")
    return program


def run_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([cli(), *map(str, args)], capture_output=True, text=True)
    if check and done.returncode not in (0, 1):
        pytest.fail(f"memreplay {' '.join(map(str, args))}: exit {done.returncode}: {done.stderr}")
    return done


def cli_json(*args: str) -> dict:
    """What `memreplay ARGS --json` writes."""
    return json.loads(run_cli(*args, "--json").stdout)


@pytest.fixture(scope="session")
def imported(tmp_path_factory: pytest.TempPathFactory):
    """NAME -> a .mrt of that real trace, imported once by the CLI."""
    folder = tmp_path_factory.mktemp("imported")
    cache = {}

    def get(name: str) -> Path:
        if name not in cache:
            out = folder / f"{name}.mrt"
            run_cli("import", real_trace(name), "-o", out)
            cache[name] = out
        return cache[name]

    return get
