"""memreplay.torch.use_policy / pool / live_stats where no GPU is needed: the spec is checked
before torch or CUDA is touched, every refusal is one clear error, and the GPU paths skip
cleanly here (tools/gpu/live_policy_check.sh runs them on a GPU)."""

from __future__ import annotations

import pytest

import memreplay.torch as mt
from memreplay.torch import _live


def _library_or_skip():
    try:
        return _live.find_alloc_library()
    except mt.PolicyUnavailable as e:
        pytest.skip(str(e))


def test_the_package_ships_the_allocator_library():
    path = _library_or_skip()
    assert path.name == "libmemreplay_alloc.so"


@pytest.mark.parametrize("spec", ["no_such_policy", "pytorch:no_such_option:1"])
def test_a_bad_spec_is_a_value_error_naming_it(spec):
    _library_or_skip()
    with pytest.raises(ValueError) as error:
        mt.use_policy(spec)
    message = str(error.value)
    assert spec.split(":")[0] in message and "\n" not in message


def test_a_missing_plugin_is_a_value_error_naming_the_path(tmp_path):
    _library_or_skip()
    missing = tmp_path / "no_such_plugin.so"
    with pytest.raises(ValueError, match="no_such_plugin.so"):
        mt.use_policy(str(missing))


def test_an_empty_spec_is_refused():
    with pytest.raises(ValueError, match="non-empty"):
        mt.use_policy("")


def test_without_a_gpu_use_policy_says_why():
    _library_or_skip()
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        pytest.skip("a GPU is visible: tools/gpu/live_policy_check.sh covers it")
    with pytest.raises(mt.PolicyUnavailable) as error:
        mt.use_policy("bfc")
    assert "torch" in str(error.value)
    with pytest.raises(mt.PolicyUnavailable):
        with mt.pool("bfc"):
            pass


def test_live_stats_are_empty_before_the_first_allocation():
    _library_or_skip()
    assert mt.live_stats() == {}
    assert mt.finish_trace() is False
