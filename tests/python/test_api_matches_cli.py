"""memreplay's functions give what the CLI's --json gives, field for field, on the real traces (the
timings apart), and what PyTorch's own allocator did where the ground truth has it."""

from __future__ import annotations

import json
import pickle

import pytest

import memreplay
from conftest import REAL, REPO, cli_json, run_cli

POLICIES = ["pytorch", "pytorch:expandable_segments:True", "pytorch:max_split_size_mb:64", "bfc", "passthrough"]


def untimed(document):
    """The document without its wall-clock fields (replay_seconds, device_call_seconds, seconds)."""
    if isinstance(document, dict):
        return {k: untimed(v) for k, v in document.items() if not k.endswith("seconds")}
    if isinstance(document, list):
        return [untimed(v) for v in document]
    return document


@pytest.mark.parametrize("name", ["gpt2_train.default", "resnet50_train.default", "multistream_pipeline.default"])
@pytest.mark.parametrize("policy", POLICIES)
def test_replay_equals_the_cli_field_for_field(imported, name, policy):
    trace = imported(name)
    ours = memreplay.replay(trace, policy=policy).to_dict()
    theirs = cli_json("replay", trace, "--policy", policy)
    assert untimed(ours) == untimed(theirs)
    assert ours.keys() == theirs.keys()


def test_replay_under_a_capacity_equals_the_cli_and_runs_out_there(imported):
    trace = imported("gpt2_train.default")
    ours = memreplay.replay(trace, capacity="7GiB")
    theirs = cli_json("replay", trace, "--capacity", "7GiB")
    assert untimed(ours.to_dict()) == untimed(theirs)
    assert ours.oom and ours["capacity"] == 7 << 30 and ours.num_ooms == 1


def test_torch_names_are_the_replays_numbers_and_those_of_pytorch_itself(imported):
    truth = json.loads((REAL / "groundtruth" / "replay" / "gpt2_train.default.default.json").read_text())["run"]
    result = memreplay.replay(imported("gpt2_train.default"))
    assert result["reserved_bytes.all.peak"] == result.reserved_peak == truth["reserved_peak"]
    assert result["allocated_bytes.all.peak"] == truth["allocated_peak"]
    assert result["requested_bytes.all.peak"] == truth["requested_peak"]
    assert result.num_device_alloc == result["device_alloc_calls"] == truth["num_device_alloc"]
    assert result.num_device_free == truth["num_device_free"]
    assert result.num_alloc_retries == truth["num_alloc_retries"] and result.num_ooms == truth["num_ooms"]
    assert result.memory_stats()["num_device_alloc"] == truth["num_device_alloc"]
    assert "reserved_bytes.all.peak" in result and set(result.to_dict()) <= set(result)


def test_compare_equals_the_cli_and_tabulates(imported):
    trace = imported("vit_infer_varbatch.default")
    comparison = memreplay.compare(trace, POLICIES)
    args = [a for p in POLICIES for a in ("--policy", p)]
    assert untimed(comparison.to_dict()) == untimed(cli_json("compare", trace, *args))
    assert [r["policy"] for r in comparison] == POLICIES
    frame = comparison.to_pandas()
    assert list(frame.index) == POLICIES
    assert frame.loc["pytorch", "reserved_peak"] == comparison[0].reserved_peak
    # The star is compare's (results/recommendation.h): the lowest reserved peak among the replays
    # that qualify (no OOM, within the call rule), not passthrough's with its many device calls.
    assert comparison.best["policy"] == comparison.to_dict()["recommended"] != "passthrough"
    assert comparison.best.reserved_peak == min(r.reserved_peak for r in comparison if r["standing"] == "qualifies")
    assert "<table>" in comparison._repr_html_() and "pytorch:max_split_size_mb:64" in comparison._repr_html_()


def test_fit_and_fits_equal_the_cli(imported):
    trace = imported("gpt2_train.default")
    found = memreplay.fit(trace, policy="pytorch:expandable_segments:True")
    assert untimed(found.to_dict()) == untimed(cli_json("fit", trace, "--policy", "pytorch:expandable_segments:True"))
    assert memreplay.fits(trace, found.min_fit_bytes, policy="pytorch:expandable_segments:True")
    at = memreplay.fit(trace, capacity="7GiB")
    assert untimed(at.to_dict()) == untimed(cli_json("fit", trace, "--capacity", "7GiB"))
    assert not at.fits and not memreplay.fits(trace, "7GiB") and at.oom["request_bytes"] > 0


def test_bound_advise_check_and_info_equal_the_cli(imported, tmp_path):
    trace = imported("gpt2_train.stacks")
    assert untimed(memreplay.bound(trace).to_dict()) == untimed(cli_json("bound", trace))
    advice = memreplay.advise(trace, fit=False)
    assert untimed(advice.to_dict()) == untimed(cli_json("advise", trace, "--no-fit"))
    assert str(advice) == run_cli("advise", trace, "--no-fit").stdout
    assert all(item.setting == item.paste for item in advice)
    policies = ["pytorch", "pytorch:expandable_segments:True"]
    checked = memreplay.check([trace], policies, max_reserved="10GiB", junit=tmp_path / "check.xml")
    cli = cli_json("check", trace, "--policy", policies[0], "--policy", policies[1], "--max-reserved", "10GiB")
    assert untimed(checked.to_dict()) == untimed(cli)
    assert checked and checked.regressions == [] and (tmp_path / "check.xml").read_text().startswith("<?xml")
    assert memreplay.load(trace).info() == cli_json("info", trace)


def test_check_fails_a_limit_with_the_clis_verdict(imported):
    trace = imported("gpt2_train.default")
    checked = memreplay.check(trace, "pytorch", max_reserved="1GiB")
    assert not checked and checked.failures == 1
    assert checked.regressions[0].startswith("gpt2_train.default pytorch: reserved_peak")
    assert run_cli("check", trace, "--policy", "pytorch", "--max-reserved", "1GiB").returncode == 1


def test_exports_and_report_are_the_clis_files(imported, tmp_path):
    trace = imported("gpt2_train.stacks")
    ours = memreplay.export(trace, tmp_path / "ours.pickle", to="memory-viz")
    run_cli("export", trace, "--to", "memory-viz", "-o", tmp_path / "cli.pickle")
    # The same snapshot (its pickled bytes differ from run to run, the CLI's too, in what it memoizes).
    with open(ours, "rb") as f:
        assert pickle.load(f) == pickle.loads((tmp_path / "cli.pickle").read_bytes())
    ours = memreplay.export(trace, tmp_path / "ours.json", to="perfetto", policies=["pytorch", "bfc"])
    run_cli("export", trace, "--to", "perfetto", "--policy", "pytorch", "--policy", "bfc", "-o", tmp_path / "cli.json")
    assert open(ours, "rb").read() == (tmp_path / "cli.json").read_bytes()
    page = memreplay.report(trace, tmp_path / "report.html")
    run_cli("report", trace, "-o", tmp_path / "cli.html")
    assert open(page).read() == (tmp_path / "cli.html").read_text()


def test_a_trace_renders_in_jupyter(imported):
    trace = memreplay.load(imported("gpt2_train.stacks"))
    page = trace._repr_html_()
    assert "<table>" in page and "gpt2_train.stacks" in page
    assert "reserved_bytes.all.peak" in memreplay.replay(trace)._repr_html_()


def test_a_trace_of_another_torch_release_warns_as_the_cli_does(tmp_path):
    from conftest import real_trace

    trace = tmp_path / "newer.mrt"
    run_cli("import", real_trace("multistream_pipeline.default"), "-o", trace, "--torch-version", "2.13.0")
    cli_warning = run_cli("replay", trace).stderr
    with pytest.warns(memreplay.MemreplayWarning) as caught:
        memreplay.replay(trace)
    assert [str(w.message) for w in caught] and all(str(w.message) in cli_warning for w in caught)
    assert "2.13" in str(caught[0].message)


def test_a_plugin_loaded_by_path_replays_as_through_the_cli(imported):
    import os
    from pathlib import Path

    build = Path(os.environ.get("MEMREPLAY_BUILD_DIR", "build"))
    plugin = build / "examples" / "plugin" / "exact_size_plugin.so"
    if not plugin.is_file():
        pytest.fail(f"{plugin}: the example plugin is not built")
    trace = imported("gpt2_train.default")
    name = memreplay.load_plugin(plugin)
    assert name == "example_exact_size" and name in [p["name"] for p in memreplay.policies()]
    cli = cli_json("replay", trace, "--plugin", plugin, "--policy", name)
    assert untimed(memreplay.replay(trace, policy=name).to_dict()) == untimed(cli)
    assert untimed(memreplay.replay(trace, policy=str(plugin)).to_dict()) == untimed(cli)


def test_a_snapshot_loaded_under_its_runs_cap_replays_as_the_cli_does(tmp_path):
    # The capped pool job with a retry right after a free, without stacks (tests/data/pools): under
    # the job's cap its bursts are read as the allocator's retries, as `import --capacity` reads them.
    snapshot = REPO / "tests" / "data" / "pools" / "capped_retry.retry_after_free.pickle.xz"
    cap = 867416960
    assert memreplay.replay(snapshot, capacity=cap).num_alloc_retries == 2
    assert memreplay.replay(memreplay.load(snapshot), capacity=cap).num_alloc_retries == 1  # rule 3, no cap known
    run_cli("import", snapshot, "-o", tmp_path / "capped.mrt", "--capacity", f"{cap}B")
    trace = memreplay.load(snapshot, capacity=cap)
    # Its trace records the cap: a replay without one runs under it, and says so.
    with pytest.warns(memreplay.MemreplayWarning, match="replayed under the per-process cap the run recorded"):
        r = memreplay.replay(trace)
    assert (r["capacity"], r.num_alloc_retries) == (cap, 2)
    theirs = cli_json("replay", tmp_path / "capped.mrt")
    assert {k: v for k, v in untimed(r.to_dict()).items() if k != "trace"} == \
        {k: v for k, v in untimed(theirs).items() if k != "trace"}
