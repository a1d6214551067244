"""replay(from_empty_pool=True), what the pytest plugin's live mode replays with: of a trace that
starts mid-run, only the run's own allocations, from an empty pool, so the reserved peak does not
depend on what was allocated or cached before the recording began."""

from __future__ import annotations

import memreplay


def untimed(result):
    return {k: v for k, v in result.to_dict().items() if not k.endswith("seconds")}


def test_a_trace_that_starts_mid_run_is_replayed_without_its_starting_state(imported):
    trace = imported("gpt2_train.truncated")  # starts mid-run: 137 segments, 679 live blocks rebuilt
    adopted = memreplay.replay(trace)
    fresh = memreplay.replay(trace, from_empty_pool=True)
    assert adopted["preexisting_segments"] == 137 and fresh["preexisting_segments"] == 0
    assert fresh.requested_peak < adopted.requested_peak and fresh.reserved_peak < adopted.reserved_peak
    assert fresh.complete and not fresh.oom and fresh["skipped_events"] == 0
    assert fresh["events"] == adopted["events"]


def test_a_trace_that_starts_empty_replays_as_before(imported):
    trace = imported("gpt2_train.default")
    assert untimed(memreplay.replay(trace, from_empty_pool=True)) == untimed(memreplay.replay(trace))
