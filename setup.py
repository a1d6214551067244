"""Builds the native half of the memreplay package with CMake (pyproject.toml holds the rest).

The extension module memreplay._core, the `memreplay` CLI and libmemreplay_record.so (the live
recorder's core) come from one CMake build of this checkout:
  MEMREPLAY_BUILD_DIR=DIR   an existing build directory (configured for this Python): only the
                            targets the package needs are brought up to date there, so CI does
                            not compile the C++ twice;
  otherwise                 build/python-<python tag>/ is configured and built (Release, without
                            tests and benchmarks; Ninja when it is installed).
MEMREPLAY_CMAKE_ARGS adds arguments to that configure step. The build writes package_files.txt,
the list of files that go into the package, and where; MEMREPLAY_PACKAGE_FILES=FILE takes such a
list made elsewhere instead, and builds nothing (tools/gpu/python_wheel.sh).

MEMREPLAY_BUNDLE_LIBS=1 copies the shared libraries the module and the CLI need beyond the C and
C++ runtimes (protobuf, abseil, zstd, ...) into the package's lib/, where they find them (each
given the run path $ORIGIN with patchelf): a wheel for machines that lack memreplay's build
dependencies.
"""

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def cmake(*args: str) -> None:
    print("memreplay:", "cmake", *args, flush=True)
    subprocess.run(["cmake", *args], check=True)


def build_directory() -> Path:
    given = os.environ.get("MEMREPLAY_BUILD_DIR")
    if given:
        directory = Path(given)
        if not directory.is_absolute():
            directory = ROOT / directory
        if not (directory / "CMakeCache.txt").is_file():
            sys.exit(f"memreplay: MEMREPLAY_BUILD_DIR={given}: not a configured CMake build directory")
        return directory
    directory = ROOT / "build" / f"python-{sys.implementation.cache_tag}"
    if not (directory / "CMakeCache.txt").is_file():
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        cmake("-S", str(ROOT), "-B", str(directory), *generator, "-DCMAKE_BUILD_TYPE=Release",
              "-DMEMREPLAY_BUILD_TESTS=OFF", "-DMEMREPLAY_BUILD_BENCHMARKS=OFF", f"-DPython_EXECUTABLE={sys.executable}",
              *shlex.split(os.environ.get("MEMREPLAY_CMAKE_ARGS", "")))
    return directory


def package_files(listing: Path, directory: Path) -> list:
    """(source, destination in the package) pairs, as the build lists them."""
    if not listing.is_file():
        sys.exit(f"memreplay: {directory} builds no Python module (configure it with pybind11 installed: "
                 "apt-get install pybind11-dev)")
    pairs = [line.split("\t") for line in listing.read_text().splitlines() if line.strip()]
    module = [Path(source) for source, destination in pairs if destination.startswith("_core")]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if module and not module[0].name.endswith(suffix):
        sys.exit(f"memreplay: {directory} builds the module for another Python ({module[0].name}; this one, "
                 f"{sys.executable}, needs *{suffix}): configure it with -DPython_EXECUTABLE={sys.executable}")
    return [(Path(source), destination) for source, destination in pairs]


# What every Linux has: never bundled.
SYSTEM_LIBRARIES = ("linux-vdso", "ld-linux", "libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so",
                    "libgcc_s.so", "libstdc++.so")


def bundle_libraries(package: Path) -> None:
    """Copies what ldd resolves for the module and the CLI, but the system's core, into lib/."""
    if shutil.which("patchelf") is None:
        sys.exit("memreplay: MEMREPLAY_BUNDLE_LIBS=1 needs patchelf (apt-get install patchelf)")
    lib = package / "lib"
    binaries = [*package.glob("_core*.so"), package / "bin" / "memreplay", *lib.glob("libmemreplay_*.so")]
    for binary in binaries:
        listing = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) < 3 or parts[1] != "=>" or not parts[2].startswith("/"):
                continue
            if parts[0].startswith(SYSTEM_LIBRARIES) or (lib / parts[0]).exists():
                continue
            shutil.copy2(parts[2], lib / parts[0])
            # It finds what it needs beside itself (libabsl_hash needs libabsl_city, say).
            subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", str(lib / parts[0])], check=True)
            print(f"memreplay: bundled {parts[2]}", flush=True)


class CMakeBuild(build_ext):
    """Builds the CMake targets the package needs and copies them into it."""

    def run(self) -> None:
        given = os.environ.get("MEMREPLAY_PACKAGE_FILES")
        if given:
            listing, directory = Path(given), Path(given).parent
        else:
            directory = build_directory()
            jobs = [f"-j{self.parallel}"] if self.parallel else []
            cmake("--build", str(directory), "--target", "memreplay_python_package", *jobs)
            listing = directory / "python" / "package_files.txt"
        package = Path(self.get_ext_fullpath("memreplay._core")).parent
        for source, destination in package_files(listing, directory):
            target = package / destination
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            print(f"memreplay: {source} -> {target}", flush=True)
        if os.environ.get("MEMREPLAY_BUNDLE_LIBS") == "1":
            bundle_libraries(package)


# setuptools' own staging, emptied first: files of an earlier build must not reach this package.
SETUPTOOLS_BUILD = ROOT / "build" / "python-setuptools"
shutil.rmtree(SETUPTOOLS_BUILD, ignore_errors=True)

setup(ext_modules=[Extension("memreplay._core", sources=[])], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": str(SETUPTOOLS_BUILD)}})
