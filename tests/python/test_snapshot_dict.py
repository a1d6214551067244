"""The dict torch.cuda.memory._snapshot() returns, loaded in memory, is byte for byte the trace its
pickle imports to: every real trace, unpickled with Python's pickle from its .pickle.xz."""

from __future__ import annotations

import lzma
import pickle

import pytest

import memreplay
from conftest import TRACES, real_trace, run_cli

NAMES = sorted(p.name[: -len(".pickle.xz")] for p in TRACES.glob("*.pickle.xz"))


def read(trace: memreplay.Trace) -> bytes:
    with open(trace.path, "rb") as f:
        return f.read()


def snapshot_dict(name: str) -> dict:
    with lzma.open(real_trace(name)) as f:
        return pickle.load(f)


@pytest.mark.parametrize("name", NAMES)
def test_the_dict_gives_the_trace_of_its_pickle(name, tmp_path):
    source = str(real_trace(name))
    from_dict = memreplay.load(snapshot_dict(name), name=source)
    from_file = memreplay.load(source)
    run_cli("import", source, "-o", tmp_path / "cli.mrt")
    dict_bytes = open(from_dict.path, "rb").read()
    assert dict_bytes == open(from_file.path, "rb").read()
    assert dict_bytes == (tmp_path / "cli.mrt").read_bytes()
    assert from_dict.name == from_file.name == name


def test_the_whole_set_is_there():
    assert len(NAMES) >= 9, NAMES


def test_a_dict_of_another_pickle_order_and_its_copy_give_one_trace():
    snapshot = snapshot_dict("gpt2_train.stacks")
    reordered = {k: snapshot[k] for k in reversed(list(snapshot))}
    first = read(memreplay.load(snapshot))
    assert read(memreplay.load(reordered)) == first
    # Nothing of the dict changed: it loads again to the same bytes.
    assert read(memreplay.load(snapshot)) == first


def test_a_loaded_dict_replays_and_its_temporary_file_goes_with_it():
    import os

    trace = memreplay.load(snapshot_dict("gpt2_train.default"), name="gpt2_train.default")
    path = trace.path
    assert trace.temporary and os.path.isfile(path)
    assert memreplay.replay(trace)["reserved_bytes.all.peak"] == memreplay.replay(path).reserved_peak
    del trace
    import gc

    gc.collect()
    assert not os.path.exists(path)
