"""What each CUDA virtual-memory call costs per 2 MiB page on this GPU (ctypes on libcuda, no
other dependency), the calls a VMM policy's map and unmap are made of:

    cuMemCreate, cuMemMap, cuMemSetAccess (one page a call, and 16), cuMemUnmap, cuMemRelease,
    cuMemMap of a handle kept from an earlier mapping (a move that keeps its physical page), and
    all five calls for handles of 16 pages each instead of one

    python3 tools/gpu/vmm_call_costs.py [PAGES [RESERVE_GIB]]   (default 256 pages, 512 MiB; device 0)

RESERVE_GIB: each range the pages are mapped into is reserved that large (the pages at its start),
as a policy's arena reserves far more address space than it maps (the memreplay policy: 4 x the
device's memory); default: just the pages.

Prints one line per call: mean microseconds per page, median of 5 rounds. The figures of one
H100 are in docs/deploying.md.
"""

from __future__ import annotations

import ctypes
import statistics
import sys
import time

cuda = ctypes.CDLL("libcuda.so.1")
CUdeviceptr = ctypes.c_uint64


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", AllocFlags)]


class AccessDesc(ctypes.Structure):
    _fields_ = [("location", Location), ("flags", ctypes.c_int)]


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed: CUresult {result}")


def main() -> None:
    pages = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    reserve_gib = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    check(cuda.cuInit(0), "cuInit")
    device, context = ctypes.c_int(), ctypes.c_void_p()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    prop = Prop()
    prop.type = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location = Location(1, 0)  # CU_MEM_LOCATION_TYPE_DEVICE, device 0
    page = ctypes.c_size_t()
    check(cuda.cuMemGetAllocationGranularity(ctypes.byref(page), ctypes.byref(prop), 0), "granularity")
    size = page.value
    access = AccessDesc(Location(1, 0), 3)  # read-write
    base_a, base_b = CUdeviceptr(), CUdeviceptr()
    reserved = max(size * pages, int(reserve_gib * 2**30) // size * size)
    t0 = time.perf_counter()
    check(cuda.cuMemAddressReserve(ctypes.byref(base_a), ctypes.c_size_t(reserved), 0, 0, 0), "reserve")
    reserve_us = (time.perf_counter() - t0) * 1e6
    check(cuda.cuMemAddressReserve(ctypes.byref(base_b), ctypes.c_size_t(reserved), 0, 0, 0), "reserve")
    print(f"{pages} pages of {size >> 20} MiB, in ranges of {reserved / 2**30:.1f} GiB reserved "
          f"(cuMemAddressReserve: {reserve_us:.0f} us)")
    handles = [ctypes.c_uint64() for _ in range(pages)]
    rounds: dict[str, list[float]] = {}

    def timed(name, calls):
        t0 = time.perf_counter()
        for call in calls:
            call()
        rounds.setdefault(name, []).append((time.perf_counter() - t0) / pages * 1e6)

    def at(base, i):
        return CUdeviceptr(base.value + i * size)

    for _ in range(5):
        timed("cuMemCreate", [lambda h=h: check(cuda.cuMemCreate(ctypes.byref(h), ctypes.c_size_t(size),
                                                                   ctypes.byref(prop), 0), "create") for h in handles])
        timed("cuMemMap", [lambda i=i: check(cuda.cuMemMap(at(base_a, i), ctypes.c_size_t(size), 0, handles[i], 0),
                                             "map") for i in range(pages)])
        timed("cuMemSetAccess, one page a call",
              [lambda i=i: check(cuda.cuMemSetAccess(at(base_a, i), ctypes.c_size_t(size), ctypes.byref(access), 1),
                                 "access") for i in range(pages)])
        check(cuda.cuCtxSynchronize(), "sync")
        timed("cuMemUnmap", [lambda i=i: check(cuda.cuMemUnmap(at(base_a, i), ctypes.c_size_t(size)), "unmap")
                             for i in range(pages)])
        # The same physical pages mapped again elsewhere: 16-page ranges, access set once per range.
        timed("cuMemMap of a kept handle", [lambda i=i: check(cuda.cuMemMap(at(base_b, i), ctypes.c_size_t(size), 0,
                                                                            handles[i], 0), "map") for i in range(pages)])
        timed("cuMemSetAccess, 16 pages a call",
              [lambda i=i: check(cuda.cuMemSetAccess(at(base_b, i), ctypes.c_size_t(16 * size), ctypes.byref(access),
                                                     1), "access") if i % 16 == 0 else None for i in range(pages)])
        check(cuda.cuCtxSynchronize(), "sync")
        for i in range(pages):
            check(cuda.cuMemUnmap(at(base_b, i), ctypes.c_size_t(size)), "unmap")
        timed("cuMemRelease", [lambda h=h: check(cuda.cuMemRelease(h), "release") for h in handles])
        # The same bytes as handles of 16 pages each (32 MiB on 2 MiB pages): create, map, access,
        # unmap and release, per page (a handle can only be unmapped whole).
        big = [ctypes.c_uint64() for _ in range(pages // 16)]
        timed("16-page handles: all five calls", [lambda j=j, h=h: (
            check(cuda.cuMemCreate(ctypes.byref(h), ctypes.c_size_t(16 * size), ctypes.byref(prop), 0), "create"),
            check(cuda.cuMemMap(at(base_a, 16 * j), ctypes.c_size_t(16 * size), 0, h, 0), "map"),
            check(cuda.cuMemSetAccess(at(base_a, 16 * j), ctypes.c_size_t(16 * size), ctypes.byref(access), 1),
                  "access")) for j, h in enumerate(big)] + [lambda j=j, h=h: (
            check(cuda.cuMemUnmap(at(base_a, 16 * j), ctypes.c_size_t(16 * size)), "unmap"),
            check(cuda.cuMemRelease(h), "release")) for j, h in enumerate(big)])
    for name, values in rounds.items():
        print(f"{name:36s} {statistics.median(values):8.2f} us per page")


if __name__ == "__main__":
    main()
