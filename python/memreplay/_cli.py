"""The `memreplay` command: the C++ command-line tool installed inside this package (bin/memreplay),
run in this process's place with the same arguments."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def executable() -> Path:
    """The installed command-line tool."""
    return Path(__file__).resolve().parent / "bin" / "memreplay"


def main() -> None:
    program = executable()
    if not program.is_file():
        sys.exit(f"memreplay: {program} is missing: reinstall the memreplay package (pip install .)")
    os.execv(str(program), [str(program), *sys.argv[1:]])


if __name__ == "__main__":
    main()
