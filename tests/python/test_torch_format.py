"""memreplay.torch holds its copies of the trace format against libmemreplay_record.so.

Run by tests/torch_package_test.cpp with MEMREPLAY_RECORD_LIB set to the library of this build and
python/ on PYTHONPATH; needs no torch.
"""

import ctypes
import ctypes.util
import os
import unittest
from pathlib import Path

from memreplay.torch import _native


class FakeLibrary:
    """What check_format asks a library, with chosen answers."""

    def __init__(self, major=_native.FORMAT_MAJOR, kinds=None, flags=None):
        kinds = dict(_native.KINDS, **(kinds or {}))
        flags = dict(_native.FLAGS, **(flags or {}))
        self.memreplay_format_version = lambda minor: major
        self.memreplay_event_kind = lambda name: kinds.get(name.decode(), 0)
        self.memreplay_event_flag = lambda name: flags.get(name.decode(), 0)


class FormatCheck(unittest.TestCase):
    def test_the_library_of_this_build_agrees(self):
        library = Path(os.environ["MEMREPLAY_RECORD_LIB"])
        _native.check_format(library)
        # What it reports is what proto/event.h says, for every name the package uses.
        major, kinds, flags = _native._format_of(ctypes.CDLL(str(library)))
        self.assertEqual((major, kinds, flags), (_native.FORMAT_MAJOR, _native.KINDS, _native.FLAGS))

    def test_importing_the_package_checks_the_library(self):
        import memreplay.torch

        self.assertEqual(memreplay.torch._library, Path(os.environ["MEMREPLAY_RECORD_LIB"]))

    def test_another_major_version_is_refused_naming_both(self):
        with self.assertRaisesRegex(_native.FormatMismatch, r"lib\.so .*format version 2, this package 1"):
            _native.check_format(Path("lib.so"), FakeLibrary(major=2))

    def test_a_renumbered_kind_is_refused_naming_it(self):
        with self.assertRaisesRegex(_native.FormatMismatch, r"kind segment_map = 7, this package 6"):
            _native.check_format(Path("lib.so"), FakeLibrary(kinds={"segment_map": 7}))

    def test_an_unknown_flag_is_refused_naming_it(self):
        with self.assertRaisesRegex(_native.FormatMismatch, r"flag preexisting = 0, this package 1"):
            _native.check_format(Path("lib.so"), FakeLibrary(flags={"preexisting": 0}))

    def test_a_library_without_the_format_functions_is_refused(self):
        libz = ctypes.util.find_library("z")
        if libz is None:
            self.skipTest("no libz to stand in for an old library")
        with self.assertRaisesRegex(_native.FormatMismatch, r"cannot ask it for its trace format"):
            _native.check_format(Path(libz))


class FakeTorch:
    """What the live recorder's header asks torch, with chosen answers."""

    __version__ = "2.13.0+cu128"

    class version:
        git_version = "0123456789abcdef"

    class cuda:
        @staticmethod
        def device_count():
            return 0


class TraceHeader(unittest.TestCase):
    def test_the_header_names_the_torch_release_and_the_allocator_settings(self):
        import memreplay.torch

        snapshot = {"allocator_settings": {"expandable_segments": True, "max_split_size": -1}}
        pairs = dict(memreplay.torch._header(FakeTorch, False, snapshot))
        # The key every trace command compares (policies/torch_version.h: kTorchVersionSetting).
        self.assertEqual(pairs["setting:torch_version"], "2.13.0+cu128")
        self.assertEqual(pairs["setting:torch_git_version"], "0123456789abcdef")
        self.assertEqual(pairs["setting:expandable_segments"], "True")
        self.assertEqual(pairs["setting:max_split_size"], "-1")

    def test_the_header_records_each_devices_cap_apart_from_its_memory(self):
        import memreplay.torch

        total, allowed = 150109880320, 867416960  # the capped pool job's H200 and cap

        class Props:
            name = "NVIDIA H200"
            total_memory = total

        class CappedTorch(FakeTorch):
            class cuda:
                @staticmethod
                def device_count():
                    return 2

                @staticmethod
                def get_device_properties(index):
                    return Props

                class memory:
                    @staticmethod
                    def get_per_process_memory_fraction(index):
                        # torch's getMemoryFraction: allowed_memory_maximum / total, 1.0 without a cap
                        return allowed / total if index == 0 else 1.0

        pairs = memreplay.torch._header(CappedTorch, False, {})
        self.assertIn(("device", f"0;{total};NVIDIA H200"), pairs)
        self.assertIn(("device_cap", f"0;{allowed}"), pairs)  # the allocator's bytes, exactly
        self.assertEqual([p for p in pairs if p[0] == "device_cap"], [("device_cap", f"0;{allowed}")])

        class OldTorch(CappedTorch):  # before torch 2.8: no get_per_process_memory_fraction
            class cuda(CappedTorch.cuda):
                memory = object()

        self.assertFalse([p for p in memreplay.torch._header(OldTorch, False, {}) if p[0] == "device_cap"])


if __name__ == "__main__":
    unittest.main()
