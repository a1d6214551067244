"""The installed package: the `memreplay` command on PATH is the C++ CLI, versions agree, every
public name has a docstring and a type stub."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
from pathlib import Path

import memreplay
import memreplay._core
from conftest import cli


def test_the_command_is_the_cli_of_this_package():
    done = subprocess.run([cli(), "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"memreplay {memreplay._core.__version__}"
    assert memreplay.__version__ == memreplay._core.__version__
    listing = subprocess.run([cli(), "policies"], capture_output=True, text=True, check=True).stdout
    listed = listing.split("Devices")[0]
    cli_names = {line.split()[0] for line in listed.splitlines() if line.startswith("  ") and not line.startswith("   ")}
    # The CLI's policies are the module's (which may have loaded plugins besides).
    assert cli_names and cli_names <= {p["name"] for p in memreplay.policies()}
    # Entry for entry as `memreplay policies --json` lists them.
    listed = json.loads(subprocess.run([cli(), "policies", "--json", "-"], capture_output=True, text=True,
                                       check=True).stdout)["policies"]
    assert listed and all(entry in memreplay.policies() for entry in listed)


def test_every_public_name_has_a_docstring():
    missing = [name for name in memreplay.__all__ if not inspect.getdoc(getattr(memreplay, name))]
    assert missing == []
    for name in ("Trace", "ReplayResult", "Comparison", "FitResult", "Advice", "CheckResult"):
        cls = getattr(memreplay, name)
        undocumented = [m for m, v in vars(cls).items()
                        if not m.startswith("_") and callable(getattr(v, "fget", v)) and not inspect.getdoc(v)]
        assert undocumented == [], name


def test_the_stubs_name_every_public_name():
    package = Path(memreplay.__file__).parent
    assert (package / "py.typed").is_file()
    stub = ast.parse((package / "__init__.pyi").read_text())
    stubbed = {n.name for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stubbed |= {t.id for n in stub.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    stubbed |= {a.asname or a.name for n in stub.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert set(memreplay.__all__) <= stubbed
    assert (package / "_core.pyi").is_file()


def test_the_recorder_is_part_of_the_package_and_needs_no_extension():
    import memreplay.torch
    import memreplay.torch._native as native

    assert native.find_record_library().parent == Path(memreplay.__file__).parent / "lib"
    headers = Path(memreplay.torch.__file__).parent / "csrc"
    assert {"tracker.cpp", "live_allocator.cpp", "pool_kind.h", "memreplay_record.h", "memreplay_record_loader.h"} <= {
        p.name for p in headers.iterdir()
    }
