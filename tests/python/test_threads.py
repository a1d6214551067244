"""Replays release the GIL: 8 Python threads replaying at once give what one thread gives."""

from __future__ import annotations

import threading

import memreplay

NAMES = ["gpt2_train.default", "resnet50_train.default", "vit_infer_varbatch.default", "multistream_pipeline.default",
         "gpt2_train.stacks", "gpt2_train.capped", "vit_infer_varbatch.emptycache", "gpt2_generate.default"]


def figures(result):
    d = result.to_dict()
    return {k: v for k, v in d.items() if not k.endswith("seconds")}


def test_eight_threads_replay_concurrently_and_agree(imported):
    traces = [memreplay.load(imported(name)) for name in NAMES]
    alone = [figures(memreplay.replay(t, policy="pytorch:expandable_segments:True")) for t in traces]
    together = [None] * len(traces)
    errors = []
    start = threading.Barrier(len(traces))

    def work(i):
        try:
            start.wait()
            together[i] = figures(memreplay.replay(traces[i], policy="pytorch:expandable_segments:True"))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(traces))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert together == alone


def test_imports_from_threads_agree(imported):
    from conftest import real_trace

    source = str(real_trace("gpt2_train.stacks"))
    def read(trace):
        with open(trace.path, "rb") as f:
            return f.read()

    expected = read(memreplay.load(source))
    out = [None] * 4

    def work(i):
        out[i] = read(memreplay.load(source))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [expected] * 4
