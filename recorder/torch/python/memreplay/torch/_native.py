"""Finding and building the native half of the PyTorch recorder.

Two pieces, found at run time:
- libmemreplay_record.so, built with memreplay (recorder/live/CMakeLists.txt): the recording core and
  the .mrt writer, self-contained (its own zstd and C++ runtime, hidden). Found through
  $MEMREPLAY_RECORD_LIB, else in a build*/recorder/ or lib/ directory above this package.
- the tracker extension (csrc/tracker.cpp), compiled here against the installed torch with
  torch.utils.cpp_extension the first time (cached by torch in $TORCH_EXTENSIONS_DIR), with the
  header recorder/live/memreplay_record.h found through $MEMREPLAY_SOURCE_DIR or above this package.
"""

from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_EXTENSION_NAME = "memreplay_torch_tracker"
_extension = None


class RecorderUnavailable(RuntimeError):
    """The live recorder cannot run here; the message says why and what to do."""


def _ancestors():
    return [_HERE, *_HERE.parents]


def find_record_library() -> Path:
    env = os.environ.get("MEMREPLAY_RECORD_LIB")
    if env:
        path = Path(env)
        if not path.is_file():
            raise RecorderUnavailable(f"MEMREPLAY_RECORD_LIB={env}: no such file")
        return path
    for base in _ancestors():
        candidates = [base / "lib" / "libmemreplay_record.so", base / "libmemreplay_record.so"]
        candidates += sorted(base.glob("build*/recorder/live/libmemreplay_record.so"))
        for candidate in candidates:
            if candidate.is_file():
                return candidate
    raise RecorderUnavailable(
        "cannot find libmemreplay_record.so: build memreplay (cmake --build build) or set MEMREPLAY_RECORD_LIB")


def _find_include_dir() -> Path:
    roots = [Path(os.environ["MEMREPLAY_SOURCE_DIR"])] if os.environ.get("MEMREPLAY_SOURCE_DIR") else []
    for base in roots + _ancestors():
        for candidate in (base / "recorder" / "live", base / "csrc", base / "include"):
            if (candidate / "memreplay_record.h").is_file():
                return candidate
    raise RecorderUnavailable(
        "cannot find memreplay_record.h (recorder/live/ of the memreplay sources): set MEMREPLAY_SOURCE_DIR")


def _check_torch_has_tracker(torch) -> None:
    header = Path(torch.__file__).parent / "include" / "c10" / "cuda" / "CUDACachingAllocator.h"
    if header.is_file() and "attachAllocatorTraceTracker" not in header.read_text(errors="replace"):
        raise RecorderUnavailable(
            f"torch {torch.__version__} has no CUDACachingAllocator::attachAllocatorTraceTracker (PyTorch >= 2.1 "
            "has it); record with `memreplay record` (the CUDA interposer) instead")


def extension(verbose: bool = False):
    """The compiled tracker module, with libmemreplay_record.so loaded into it."""
    global _extension
    if _extension is not None:
        return _extension
    import torch
    from torch.utils import cpp_extension

    _check_torch_has_tracker(torch)
    library = find_record_library()
    include_dir = _find_include_dir()
    try:
        module = cpp_extension.load(
            name=_EXTENSION_NAME,
            sources=[str(_HERE / "csrc" / "tracker.cpp")],
            extra_include_paths=[str(include_dir)],
            extra_cflags=["-O2"],
            extra_ldflags=["-ldl"],
            with_cuda=True,
            verbose=verbose,
        )
    except Exception as e:  # a compiler error, no CUDA_HOME, no ninja, ...
        raise RecorderUnavailable(f"cannot build the PyTorch recorder extension against torch "
                                  f"{torch.__version__}: {e}") from e
    module.load(str(library))
    _extension = module
    return module
