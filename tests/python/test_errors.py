"""Damaged input is an InputError naming the file and where in it (byte offset or event index),
a bad policy spec or byte count a ValueError; never a crash of the interpreter."""

from __future__ import annotations

import copy
import lzma
import pickle

import pytest

import memreplay
from memreplay import InputError
from conftest import real_trace


def snapshot(name: str = "gpt2_train.default") -> dict:
    with lzma.open(real_trace(name)) as f:
        return pickle.load(f)


def test_garbage_is_refused_at_byte_0(tmp_path):
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"this is neither a trace nor a snapshot" * 10)
    with pytest.raises(InputError) as e:
        memreplay.load(garbage)
    assert e.value.file == str(garbage) and e.value.offset == 0 and e.value.event is None
    assert str(e.value).startswith(f"{garbage}: byte 0: unknown input format")
    assert isinstance(e.value, ValueError)


def test_a_damaged_trace_is_refused_at_the_byte_of_its_damage(imported, tmp_path):
    data = bytearray(imported("gpt2_generate.default").read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)
    damaged = tmp_path / "damaged.mrt"
    damaged.write_bytes(bytes(data))
    with pytest.raises(InputError) as e:
        memreplay.replay(damaged)
    assert e.value.file == str(damaged) and e.value.offset is not None and 0 < e.value.offset < len(data)
    assert f": byte {e.value.offset}: " in str(e.value)


def test_a_trace_cut_off_replays_its_whole_chunks_and_says_so(imported, tmp_path):
    data = imported("gpt2_generate.default").read_bytes()
    cut = tmp_path / "cut.mrt"
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.warns(memreplay.MemreplayWarning, match="is incomplete"):
        result = memreplay.replay(cut)
    assert not result.complete and 0 < result["incomplete"]["whole_events"]
    with pytest.raises(InputError, match="the trace is incomplete") as e:
        memreplay.advise(cut)
    assert e.value.file == str(cut)


def test_a_truncated_snapshot_is_refused_with_its_offset(tmp_path):
    raw = lzma.decompress(real_trace("gpt2_train.default").read_bytes())
    cut = tmp_path / "cut.pickle"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(InputError) as e:
        memreplay.load(cut)
    assert e.value.file == str(cut) and e.value.offset is not None and e.value.offset <= len(raw) // 2
    compressed = real_trace("gpt2_train.default").read_bytes()
    cut_xz = tmp_path / "cut.pickle.xz"
    cut_xz.write_bytes(compressed[: len(compressed) // 2])
    with pytest.raises(InputError) as e:
        memreplay.load(cut_xz)
    assert e.value.file == str(cut_xz)


def test_a_bad_entry_of_a_dict_names_its_event_as_its_pickle_does(tmp_path):
    bad = snapshot()
    bad["device_traces"][0][5] = dict(bad["device_traces"][0][5], addr="not an address")
    pickled = tmp_path / "bad.pickle"
    pickled.write_bytes(pickle.dumps(bad))
    with pytest.raises(InputError) as from_dict:
        memreplay.load(bad, name=str(pickled))
    with pytest.raises(InputError) as from_pickle:
        memreplay.load(pickled)
    assert from_dict.value.event == 5 and from_dict.value.file == str(pickled)
    assert str(from_dict.value) == str(from_pickle.value)
    assert "event 5: device 0 trace entry: 'addr' is a str, expected an int" in str(from_dict.value)


@pytest.mark.parametrize("value", [object(), 1 << 70, 1.5j])
def test_values_a_snapshot_cannot_hold_are_refused(value):
    bad = snapshot()
    bad["device_traces"][0][3] = dict(bad["device_traces"][0][3], size=value)
    with pytest.raises(InputError, match="snapshot: "):
        memreplay.load(bad)


def test_a_dict_that_is_not_a_snapshot_is_refused():
    with pytest.raises(InputError, match="no 'device_traces' or 'segments' key"):
        memreplay.load({"segments": []})
    with pytest.raises(InputError, match="'device_traces' is not a list"):
        memreplay.load({"segments": [], "device_traces": 7})
    broken = copy.deepcopy(snapshot())
    broken["segments"][0]["blocks"] = "nope"
    with pytest.raises(InputError, match=r"segments\[0\]: 'blocks' is not a list"):
        memreplay.load(broken)


def test_bad_specs_and_byte_counts_are_value_errors(imported):
    trace = imported("multistream_pipeline.default")
    for spec in ["nosuch", "pytorch:no_such_option:1", "pytorch:expandable_segments:Maybe", ""]:
        with pytest.raises(ValueError) as e:
            memreplay.replay(trace, policy=spec)
        assert not isinstance(e.value, InputError), spec
    for capacity in ["7.5", "many", "0GiB", 0, -1]:
        with pytest.raises(ValueError):
            memreplay.replay(trace, capacity=capacity)
    with pytest.raises(TypeError):
        memreplay.replay(trace, capacity=7.5)
    with pytest.warns(memreplay.MemreplayWarning, match="has no unit"):
        assert memreplay.parse_bytes("1073741824") == 1 << 30
    assert memreplay.parse_bytes("24GB") == 24 * 10**9 and memreplay.parse_bytes("8GiB") == 8 << 30


def test_missing_files_and_wrong_types(tmp_path):
    with pytest.raises(FileNotFoundError):
        memreplay.load(tmp_path / "missing.mrt")
    with pytest.raises(TypeError):
        memreplay.load(42)
    with pytest.raises(InputError, match="cannot load|cannot open|lacks"):
        memreplay.load_plugin(tmp_path / "missing.so")
