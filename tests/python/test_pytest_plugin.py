"""The pytest plugin (registered through the pytest11 entry point): memreplay_check gates committed
traces on their replayed reserved peak, and --memreplay-fail-on-increase on their figures of the
last run; the limit_reserved marker runs a test unmeasured where torch sees no GPU."""

from __future__ import annotations

import pytest

from conftest import real_trace

GPT2_TRAIN = real_trace("gpt2_train.default")  # reserved peak 7.53 GiB under pytorch, 137 device calls
SMALLER = real_trace("resnet50_train.default")  # 3.35 GiB, 118 device calls


def write_test(pytester: pytest.Pytester, body: str) -> None:
    pytester.makepyfile(test_gate="import os\nimport memreplay\n\n" + body)


def test_the_plugin_is_registered(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--memreplay-fail-on-increase*", "*--memreplay-traces*"])
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["*limit_reserved(limit*"])


def test_a_trace_under_its_limit_passes(pytester):
    write_test(pytester, f"""
def test_under(memreplay_check):
    result = memreplay_check({str(GPT2_TRAIN)!r}, limit="8GiB", policy="pytorch")
    assert result["reserved_bytes.all.peak"] == 8082423808
""")
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_trace_over_its_limit_fails_with_its_peak_limit_and_stacks(pytester):
    stacks = real_trace("gpt2_train.stacks")
    write_test(pytester, f"""
def test_over(memreplay_check):
    memreplay_check({str(stacks)!r}, limit="3GiB", policy="pytorch:expandable_segments:True")
""")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*gpt2_train.stacks: reserved peak * GiB > limit 3.00 GiB under pytorch:expandable_segments:True*",
        "*stacks live at the peak*",
        "* in * blocks",
        "*.py:*",
    ])


def test_an_oom_under_a_capacity_fails(pytester):
    write_test(pytester, f"""
def test_capped(memreplay_check):
    memreplay_check({str(GPT2_TRAIN)!r}, capacity="4GiB")
""")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*out of memory under pytorch at capacity 4.00 GiB*"])


def test_fail_on_increase_holds_each_test_to_its_last_figures(pytester, tmp_path):
    choice = tmp_path / "which"
    write_test(pytester, f"""
def test_model(memreplay_check):
    path = open({str(choice)!r}).read()
    memreplay_check(memreplay.load(path, name="model"))
""")
    choice.write_text(str(SMALLER))
    pytester.runpytest("--memreplay-fail-on-increase").assert_outcomes(passed=1)
    choice.write_text(str(GPT2_TRAIN))
    grew = pytester.runpytest("--memreplay-fail-on-increase")
    grew.assert_outcomes(failed=1)
    grew.stdout.fnmatch_lines(["*model under pytorch: grew past the figures kept from earlier runs: "
                               "reserved_peak 7.53 GiB > 3.35 GiB (+1% allowed); device_calls 137 > 118 (+10% allowed)"])
    # Without the option nothing is compared; a generous tolerance lets it pass.
    pytester.runpytest().assert_outcomes(passed=1)
    pytester.runpytest("--memreplay-fail-on-increase", "--memreplay-tolerance", "reserved_peak=1000%",
                       "--memreplay-tolerance", "device_calls=1000%").assert_outcomes(passed=1)
    choice.write_text(str(SMALLER))
    pytester.runpytest("--memreplay-fail-on-increase").assert_outcomes(passed=1)


def test_traces_are_kept_where_asked(pytester, tmp_path):
    kept = tmp_path / "kept"
    write_test(pytester, f"""
def test_keep(memreplay_check):
    memreplay_check({str(GPT2_TRAIN)!r})
""")
    pytester.runpytest("--memreplay-traces", str(kept)).assert_outcomes(passed=1)
    assert [p.name for p in kept.iterdir()] == ["test_gate.py_test_keep.gpt2_train.default.mrt"]


def test_the_marker_without_a_gpu_runs_the_test_unmeasured(pytester):
    pytester.makepyfile(test_marked="""
import pytest

@pytest.mark.limit_reserved("1KiB", policy="pytorch")
def test_marked():
    assert True
""")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_failures_stacks_reach_the_users_own_frames():
    from memreplay.pytest_plugin import _frames_to_show

    torch_frames = [f"/venv/lib/python3.12/site-packages/torch/nn/modules/m{i}.py:{i} forward" for i in range(30)]
    frames = torch_frames[:20] + ["/home/me/project/test_model.py:23 train_step"] + torch_frames[20:] + \
        ["/home/me/project/test_model.py:40 test_train_step", "<frozen runpy>:88 _run_code"]
    shown = _frames_to_show(frames)
    assert shown == [frames[0], frames[1], "...", frames[20], "...", frames[-2], "..."]
    assert _frames_to_show(frames[:8]) == frames[:8]
    assert _frames_to_show(torch_frames) == torch_frames[:8] + ["..."]  # no frame of the user's: the innermost
