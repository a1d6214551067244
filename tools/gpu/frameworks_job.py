#!/usr/bin/env python3
"""Small CuPy and JAX jobs for the framework guides (docs/recording.md), run by
tools/gpu/fidelity_capture.sh under `memreplay record --malloc-as alloc`.

    frameworks_job.py cupy-plain RESULT.json   CuPy with its pool off: one cudaMalloc per array
    frameworks_job.py cupy-pool RESULT.json    CuPy's default memory pool (suballocates)
    frameworks_job.py jax RESULT.json          JAX; the caller sets XLA_PYTHON_CLIENT_ALLOCATOR

Each writes what the framework itself says it allocated, to set beside the recorded trace: the
arrays it made and their bytes, and the most bytes live at once as the job counted them.
"""

from __future__ import annotations

import json
import sys


def cupy_job(pool: bool) -> dict:
    import cupy

    if not pool:
        cupy.cuda.set_allocator(None)
    live, peak, made, total = {}, 0, 0, 0

    def keep(name, array):
        nonlocal peak, made, total
        live[name] = array
        made += 1
        total += array.nbytes
        peak = max(peak, sum(a.nbytes for a in live.values()))

    keep("w", cupy.random.standard_normal((2048, 2048), dtype=cupy.float32))
    for step in range(6):
        n = 512 * (step + 1)
        keep("x", cupy.random.standard_normal((n, 2048), dtype=cupy.float32))
        keep("y", live["x"] @ live["w"])
        keep("z", cupy.tanh(live["y"]))
        del live["x"], live["y"]
        float(live["z"].sum())
        del live["z"]
    cupy.cuda.Device().synchronize()
    return {"framework": "cupy", "pool": pool, "arrays_made": made, "bytes_made": total, "largest_live_bytes": peak}


def jax_job() -> dict:
    import os

    import jax
    import jax.numpy as jnp

    @jax.jit
    def layer(w, x):
        return jnp.tanh(x @ w)

    key = jax.random.PRNGKey(0)
    w = jax.random.normal(key, (2048, 2048), dtype=jnp.float32)
    sums = []
    for step in range(6):
        x = jax.random.normal(jax.random.fold_in(key, step), (512 * (step + 1), 2048), dtype=jnp.float32)
        sums.append(float(layer(w, x).sum()))
    stats = jax.devices()[0].memory_stats() or {}
    return {"framework": "jax", "allocator": os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default"),
            "jax": jax.__version__, "sums": sums,
            "memory_stats": {k: v for k, v in stats.items() if isinstance(v, int)}}


def main() -> None:
    kind, result_path = sys.argv[1], sys.argv[2]
    result = {"cupy-plain": lambda: cupy_job(False), "cupy-pool": lambda: cupy_job(True), "jax": jax_job}[kind]()
    with open(result_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
