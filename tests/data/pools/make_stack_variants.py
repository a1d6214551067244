#!/usr/bin/env python3
"""Derived snapshots for the empty_cache / release-and-retry inference with recorded stacks.

The H200 jobs were captured without stacks; these variants add the frames PyTorch 2.11 records
with _record_memory_history(context="all", stacks="python"), where a segment_free carries the
context of the call that released it: torch.cuda.empty_cache()'s own stack, or, for a
release-and-retry inside malloc, the stack of that malloc, which the segment_alloc and alloc that
follow carry too. Entries and their order are the recorded ones, except where said.

- capped_retry.retry_after_free.stacks.pickle.xz: capped_retry with a 512-byte alloc and its free
  (free_requested, free_completed) put right before its first retry burst, at an address the job
  allocates just after the burst, so that the burst follows a free as an empty_cache would.
- capped_retry.retry_after_free.pickle.xz: the same without any frames.
- empty_cache_steps.stacks.pickle.xz: empty_cache_steps, each burst with empty_cache()'s stack.

  python3 tests/data/pools/make_stack_variants.py   (from the repository root)
"""
import lzma
import pickle

HERE = "tests/data/pools/"
EMPTY_CACHE = [{"filename": "/usr/lib/python3/dist-packages/torch/cuda/memory.py", "line": 224, "name": "empty_cache"},
               {"filename": "tools/gpu/pool_jobs.py", "line": 301, "name": "empty_cache_steps"}]


def load(name):
    with lzma.open(HERE + name) as f:
        return pickle.load(f)


def save(snapshot, name):
    with lzma.open(HERE + name, "wb", preset=9) as f:
        pickle.dump(snapshot, f, protocol=4)


def op_frames(i, job):
    return [{"filename": "tools/gpu/pool_jobs.py", "line": 100 + i % 7, "name": job}]


def add_stacks(trace, job):
    """Frames on every entry; each release run gets the stack of the alloc that follows it."""
    for i, e in enumerate(trace):
        e["frames"] = op_frames(i, job)
    i = 0
    while i < len(trace):
        if trace[i]["action"] != "segment_free":
            i += 1
            continue
        end = i
        while end < len(trace) and trace[end]["action"] == "segment_free":
            end += 1
        yield i, end
        i = end


capped = load("capped_retry.pickle.xz")
trace = capped["device_traces"][0]
first_burst = next(i for i, e in enumerate(trace) if e["action"] == "segment_free")
taken_after = next(e for e in trace[first_burst:] if e["action"] == "alloc" and e["size"] == 128)
base = dict(trace[first_burst - 1])
tiny = [dict(base, action=a, addr=taken_after["addr"], size=512) for a in ("alloc", "free_requested", "free_completed")]
trace[first_burst:first_burst] = tiny
save(capped, "capped_retry.retry_after_free.pickle.xz")
for begin, end in add_stacks(trace, "capped_retry"):
    next_alloc = next(e for e in trace[end:] if e["action"] == "alloc")
    for e in trace[begin:end + 1]:  # the releases and the segment_alloc of that malloc
        e["frames"] = next_alloc["frames"]
save(capped, "capped_retry.retry_after_free.stacks.pickle.xz")

steps = load("empty_cache_steps.pickle.xz")
trace = steps["device_traces"][0]
for begin, end in add_stacks(trace, "empty_cache_steps"):
    for e in trace[begin:end]:
        e["frames"] = EMPTY_CACHE
save(steps, "empty_cache_steps.stacks.pickle.xz")
