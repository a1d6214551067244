"""A memreplay policy as PyTorch's CUDA allocator, live (the Python half).

Two pieces, found at run time, as the recorder's (_native.py):
- libmemreplay_alloc.so, built with memreplay (replayer/live/CMakeLists.txt): the policy, the device
  and the trace writer behind the C API of replayer/live/memreplay_alloc.h. Found through
  $MEMREPLAY_ALLOC_LIB, else in a build*/replayer/live/ or lib/ directory above this package.
- the allocator extension (csrc/live_allocator.cpp), compiled here against the installed torch the
  first time: it sets the CUDAPluggableAllocator hooks only C++ can set (record_stream,
  empty_cache, the memory fraction, private pools) and raises torch.OutOfMemoryError.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import threading
from pathlib import Path

from ._native import RecorderUnavailable, find_built_library, find_record_library

_HERE = Path(__file__).resolve().parent
_EXTENSION_NAME = "memreplay_torch_live_allocator"

_lock = threading.Lock()
_library = None  # (path, ctypes.CDLL)
_installed_spec = None  # the policy use_policy() made torch's allocator
_configured = None  # (spec, trace) the library was last configured with


class PolicyUnavailable(RuntimeError):
    """The live allocator cannot run here, or not now; the message says why and what to do."""


def find_alloc_library() -> Path:
    return find_built_library("libmemreplay_alloc.so", "MEMREPLAY_ALLOC_LIB", "replayer/live",
                              "ninja -C build memreplay_alloc", PolicyUnavailable).resolve()


def _load():
    global _library
    if _library is None:
        path = find_alloc_library()
        try:
            library = ctypes.CDLL(str(path))
        except OSError as e:
            raise PolicyUnavailable(f"cannot load {path}: {e}") from e
        library.memreplay_alloc_configure.restype = ctypes.c_int
        library.memreplay_alloc_configure.argtypes = [ctypes.c_char_p] * 4 + [ctypes.c_char_p, ctypes.c_size_t]
        library.memreplay_alloc_stats.restype = ctypes.c_size_t
        library.memreplay_alloc_stats.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        library.memreplay_alloc_finish_trace.restype = ctypes.c_int
        _library = (path, library)
    return _library


def _configure(spec: str, trace, device: str) -> Path:
    """Configures the library (the spec is checked here: ValueError for a bad one)."""
    global _configured
    if not isinstance(spec, str) or not spec:
        raise ValueError("a policy spec is a non-empty string, e.g. 'memreplay', 'bfc', "
                         "'pytorch:expandable_segments:True' or a plugin's PATH.so")
    path, library = _load()
    trace = os.fspath(trace) if trace is not None else ""
    if _configured == (spec, trace, device):
        return path
    record_library = ""
    if trace:
        try:
            record_library = str(find_record_library())
        except RecorderUnavailable as e:
            raise PolicyUnavailable(f"cannot record {trace}: {e}") from e
    error = ctypes.create_string_buffer(1024)
    if library.memreplay_alloc_configure(spec.encode(), device.encode(), trace.encode(), record_library.encode(),
                                         error, len(error)) != 0:
        message = error.value.decode(errors="replace")
        if "before the first CUDA allocation" in message or "already running" in message:
            raise PolicyUnavailable(message)
        raise ValueError(f"policy {spec!r}: {message}")
    _configured = (spec, trace, device)
    return path


def _extension(verbose: bool = False):
    import torch
    from torch.utils import cpp_extension

    include_dirs = []
    for base in [_HERE, *_HERE.parents]:
        for candidate in (base / "replayer" / "live", base / "csrc", base / "include"):
            if (candidate / "memreplay_alloc.h").is_file():
                include_dirs.append(str(candidate))
        if include_dirs:
            break
    if os.environ.get("MEMREPLAY_SOURCE_DIR"):
        include_dirs.insert(0, str(Path(os.environ["MEMREPLAY_SOURCE_DIR"]) / "replayer" / "live"))
    if not include_dirs:
        raise PolicyUnavailable("cannot find memreplay_alloc.h (replayer/live/ of the memreplay sources): "
                                "set MEMREPLAY_SOURCE_DIR")
    try:
        return cpp_extension.load(name=_EXTENSION_NAME, sources=[str(_HERE / "csrc" / "live_allocator.cpp")],
                                  extra_include_paths=include_dirs, extra_cflags=["-O2"], extra_ldflags=["-ldl"],
                                  with_cuda=True, verbose=verbose)
    except Exception as e:  # a compiler error, no CUDA_HOME, no ninja, ...
        raise PolicyUnavailable(f"cannot build the live allocator extension against torch {torch.__version__}: {e}") \
            from e


def _import_torch():
    try:
        import torch
    except ImportError as e:
        raise PolicyUnavailable(f"torch cannot be imported: {e}") from e
    return torch


def _cuda_in_use(torch) -> str:
    """Why torch's allocator can no longer be replaced ("" when it still can)."""
    if not torch.cuda.is_initialized():
        return ""
    try:
        reserved = torch.cuda.memory_reserved()
    except Exception:  # another allocator already: it reports nothing
        reserved = None
    held = f" ({reserved} bytes reserved)" if reserved else ""
    return f"CUDA is already initialized in this process{held}"


def use_policy(spec: str, *, trace=None, verbose: bool = False) -> None:
    """Makes memreplay policy `spec` torch's CUDA allocator for the rest of the process.

    Call it before the first CUDA allocation (before any tensor goes to the GPU; torch allows one
    allocator per process). trace: a .mrt path where the run's allocations are recorded; a
    simulator replay of it with the same policy (`memreplay replay TRACE --policy SPEC`) makes the
    same decisions. Raises ValueError for a bad spec, PolicyUnavailable when it cannot run here
    (no CUDA, CUDA already in use, the extension does not build)."""
    global _installed_spec
    with _lock:
        if _installed_spec is not None:
            if _installed_spec == spec:
                return
            raise PolicyUnavailable(f"policy {_installed_spec!r} is this process's CUDA allocator already "
                                    "(one allocator per process)")
        path = _configure(spec, trace, "cuda")
        torch = _import_torch()
        if not torch.cuda.is_available():
            raise PolicyUnavailable("torch.cuda is not available: a live policy needs a GPU")
        if why := _cuda_in_use(torch):
            raise PolicyUnavailable(f"{why}: call memreplay.torch.use_policy({spec!r}) before the first CUDA "
                                    "allocation, at the start of the program")
        _extension(verbose).install(str(path))
        _installed_spec = spec


@contextlib.contextmanager
def pool(spec: str, *, trace=None):
    """`with memreplay.torch.pool("bfc") as mem_pool: ...`: a torch.cuda.MemPool whose device memory
    comes from memreplay policy `spec`, used for the allocations of the block (torch's own
    allocator places the tensors in the segments the policy hands out). Under use_policy() every
    allocation is the policy's already: PolicyUnavailable then."""
    with _lock:
        torch = _import_torch()
        if _installed_spec is not None:
            raise PolicyUnavailable(f"use_policy({_installed_spec!r}) made the policy torch's allocator: every "
                                    "allocation is served by it already, a pool of it is not needed")
        if not torch.cuda.is_available():
            raise PolicyUnavailable("torch.cuda is not available: a policy's pool needs a GPU")
        path = _configure(spec, trace, "cuda")
    allocator = torch.cuda.memory.CUDAPluggableAllocator(str(path), "memreplay_alloc_malloc", "memreplay_alloc_free")
    mem_pool = torch.cuda.MemPool(allocator.allocator())
    with torch.cuda.use_mem_pool(mem_pool):
        yield mem_pool


def live_stats() -> dict:
    """torch.cuda.memory_stats()-style figures of the live policy: "reserved_bytes.all.peak",
    "allocated_bytes.all.current", "num_device_alloc", "num_device_free", "num_alloc_retries",
    "num_ooms", "device_calls", ... and "policy". Empty before the first allocation."""
    _, library = _load()
    size = library.memreplay_alloc_stats(None, 0)
    buffer = ctypes.create_string_buffer(size + 1)
    library.memreplay_alloc_stats(buffer, len(buffer))
    return json.loads(buffer.value.decode())


def finish_trace() -> bool:
    """Writes the rest of the run's trace and its footer (also done at exit); True when whole."""
    _, library = _load()
    return library.memreplay_alloc_finish_trace() == 1
