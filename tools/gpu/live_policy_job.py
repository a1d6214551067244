"""The live-policy proof on a GPU, driven by tools/gpu/live_policy_check.sh.

    live_policy_job.py case WORKLOAD ALLOCATOR RESULT.json [TRACE.mrt]   one workload, one allocator
    live_policy_job.py stream-order ALLOCATOR RESULT.json                the reused-buffer test
    live_policy_job.py report MEMREPLAY OUT RESULTS_DIR                  the comparison table

RESULTS_DIR holds case_*.json, stream_*.json and errors.txt (one failed case a line).

A case runs in a process of its own (torch takes one allocator per process). ALLOCATOR is native,
native_expandable (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, set by the caller) or
policy:SPEC (memreplay.torch.use_policy(SPEC, trace=TRACE) before CUDA is first used).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

WARMUP_STEPS = int(os.environ.get("LIVE_WARMUP_STEPS", "5"))
STEPS = int(os.environ.get("LIVE_STEPS", "50"))


def say(message: str) -> None:
    print(f"[live_policy] {message}", file=sys.stderr, flush=True)


def set_up(allocator: str, trace: str | None):
    """torch with `allocator`, seeded and deterministic."""
    if allocator.startswith("policy:"):
        import memreplay.torch

        memreplay.torch.use_policy(allocator[len("policy:"):], trace=trace)
    import torch

    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def training_step(optimizer, loss):
    """Backward through `loss` and one optimizer step; returns the loss detached."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.detach()


def gpt_workload(torch):
    """A small GPT-2-like decoder (plain torch), AdamW training steps on fixed random tokens."""
    nn = torch.nn
    vocab, width, layers, heads, seq, batch = 8192, 512, 6, 8, 256, 8

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(vocab, width)
            self.positions = nn.Embedding(seq, width)
            layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(width, vocab, bias=False)
            self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

        def forward(self, ids):
            h = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
            return self.head(self.blocks(h, mask=self.mask, is_causal=True))

    model = Gpt().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    generator = torch.Generator(device="cpu").manual_seed(1)
    data = [torch.randint(0, vocab, (batch, seq + 1), generator=generator) for _ in range(4)]

    def step(i):
        ids = data[i % len(data)].cuda(non_blocking=True)
        logits = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
        return training_step(optimizer, loss)

    return step


def resnet_workload(torch):
    """torchvision ResNet-18 (no weights), SGD training steps on fixed random images."""
    import torchvision

    model = torchvision.models.resnet18(num_classes=100).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator(device="cpu").manual_seed(2)
    images = [torch.randn(32, 3, 128, 128, generator=generator) for _ in range(4)]
    labels = [torch.randint(0, 100, (32,), generator=generator) for _ in range(4)]

    def step(i):
        x, y = images[i % 4].cuda(), labels[i % 4].cuda()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        return training_step(optimizer, loss)

    return step


def vit_workload(torch):
    """torchvision ViT-B/16 (no weights) inference at batches 1..32, varying step to step."""
    import torchvision

    model = torchvision.models.vit_b_16().cuda().eval()
    batches = [1, 2, 4, 8, 16, 32, 3, 24, 7, 12]
    generator = torch.Generator(device="cpu").manual_seed(3)
    images = {b: torch.randn(b, 3, 224, 224, generator=generator) for b in set(batches)}

    def step(i):
        with torch.inference_mode():
            out = model(images[batches[i % len(batches)]].cuda())
            return out.double().sum()

    return step


def graphs_workload(torch):
    """CUDA graphs: a whole training step (forward, backward, a capturable AdamW step) captured
    once, and an inference forward captured into the same private pool. Each step replays both on
    new data, with eager work between whose tensors live across the replays: a replay writing
    memory the allocator handed to eager work would change them (checked every step). The graphs
    are destroyed at the end (finish), which releases their pool."""
    nn = torch.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, capturable=True)
    generator = torch.Generator(device="cpu").manual_seed(4)
    inputs = [torch.randn(256, 1024, generator=generator) for _ in range(4)]
    targets = [torch.randn(256, 1024, generator=generator) for _ in range(4)]
    # The model and the optimizer live as long as the graphs: a replay writes their memory.
    state = {"x": torch.zeros(256, 1024, device="cuda"), "y": torch.zeros(256, 1024, device="cuda"), "kept": [],
             "model": model, "optimizer": optimizer}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as torch.cuda.graph's docs ask
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            nn.functional.mse_loss(model(state["x"]), state["y"]).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    optimizer.zero_grad(set_to_none=True)
    state["train"] = torch.cuda.CUDAGraph()
    with torch.cuda.graph(state["train"]):
        state["loss"] = nn.functional.mse_loss(model(state["x"]), state["y"])
        state["loss"].backward()
        optimizer.step()
    state["infer"] = torch.cuda.CUDAGraph()
    with torch.cuda.graph(state["infer"], pool=state["train"].pool()):
        with torch.no_grad():
            state["out"] = model(state["x"]).sum()

    def step(i):
        state["x"].copy_(inputs[i % 4].cuda())
        state["y"].copy_(targets[i % 4].cuda())
        kept = state["kept"]
        kept.append((torch.full((1 + i % 7, 1 << 18), float(i), device="cuda"), float(i)))
        if len(kept) > 5:
            kept.pop(0)
        state["train"].replay()
        scratch = torch.randn(512, 2048, device="cuda") @ torch.randn(2048, 512, device="cuda")
        state["infer"].replay()
        for tensor, value in kept:
            if not bool((tensor == value).all()):
                raise RuntimeError(f"step {i}: an eager tensor changed under a graph replay")
        return state["loss"].detach().double() * 1e6 + state["out"].detach().double() + 0 * scratch.sum().double()

    def finish():
        state.clear()  # the graphs and their outputs: the pool is released
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        after = torch.ones(64 << 20, device="cuda")  # memory to be had after the release
        torch.cuda.synchronize()
        del after

    step.finish = finish
    return step


WORKLOADS = {"gpt": gpt_workload, "resnet18": resnet_workload, "vit_infer": vit_workload, "graphs": graphs_workload}


def run_case(workload: str, allocator: str, result_path: str, trace: str | None) -> None:
    started = time.perf_counter()
    torch = set_up(allocator, trace)
    step = WORKLOADS[workload](torch)
    values, times = [], []
    torch.cuda.synchronize()
    warmup_started = time.perf_counter()
    for i in range(WARMUP_STEPS + STEPS):
        t0 = time.perf_counter()
        value = step(i)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        values.append(float(value.item()))
    if hasattr(step, "finish"):
        step.finish()
    result = {"workload": workload, "allocator": allocator, "values": values,
              "first_step_s": times[0], "warmup_s": sum(times[:WARMUP_STEPS]),
              "median_step_s": statistics.median(times[WARMUP_STEPS:]), "steps": STEPS,
              "setup_s": warmup_started - started}
    if allocator.startswith("policy:"):
        import memreplay.torch

        result["stats"] = memreplay.torch.live_stats()
        result["trace_whole"] = memreplay.torch.finish_trace() if trace else None
        result["trace"] = trace
    else:
        stats = torch.cuda.memory_stats()
        result["stats"] = {k: stats.get(k, 0) for k in (
            "reserved_bytes.all.peak", "allocated_bytes.all.peak", "num_device_alloc", "num_device_free",
            "num_alloc_retries", "num_ooms")}
    with open(result_path, "w") as f:
        json.dump(result, f)


def stream_order(allocator: str, result_path: str) -> None:
    """A long kernel on stream A reads x; x is freed (record_stream on A); y is allocated on stream
    B and overwritten at once. x's reader must still see x's values."""
    torch = set_up(allocator, None)
    n = 64 << 20  # 256 MiB of float32
    a, b = torch.cuda.Stream(), torch.cuda.Stream()
    x = torch.ones(n, device="cuda")
    torch.cuda.synchronize()
    x_address = x.data_ptr()
    with torch.cuda.stream(a):
        torch.cuda._sleep(2_000_000_000)  # about a second: x's reader is still queued below
        read = x.sum()
    x.record_stream(a)
    del x
    with torch.cuda.stream(b):
        y = torch.empty(n, device="cuda")
        y.fill_(7.0)
    torch.cuda.synchronize()
    result = {"allocator": allocator, "reused": y.data_ptr() == x_address, "read": float(read.item()),
              "expected": float(n)}
    result["ok"] = result["read"] == result["expected"]
    with open(result_path, "w") as f:
        json.dump(result, f)


def replay(memreplay: str, trace: str, spec: str) -> dict:
    done = subprocess.run([memreplay, "replay", trace, "--policy", spec, "--json", "-"], capture_output=True, text=True,
                          timeout=240)
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    data = json.loads(done.stdout)
    return data[0] if isinstance(data, list) else data


def load_results(folder: str) -> dict:
    cases = {"cases": [], "stream_order": [], "errors": []}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.endswith(".json") and name.startswith(("case_", "stream_")):
            with open(path) as f:
                cases["cases" if name.startswith("case_") else "stream_order"].append(json.load(f))
    errors = os.path.join(folder, "errors.txt")
    if os.path.exists(errors):
        with open(errors) as f:
            cases["errors"] = [line.strip() for line in f if line.strip()]
    return cases


def report(memreplay: str, out: str, folder: str) -> int:
    """Compares the cases, writes live_policy.json and live_policy.md; exit 1 when a check failed."""
    cases = load_results(folder)
    by = {(c["workload"], c["allocator"]): c for c in cases.get("cases", []) if "values" in c}
    rows, failed = [], False
    for (workload, allocator), case in sorted(by.items()):
        if not allocator.startswith("policy:"):
            continue
        spec = allocator[len("policy:"):]
        native = by.get((workload, "native"))
        expandable = by.get((workload, "native_expandable"))
        live = case["stats"]
        replayed = replay(memreplay, case["trace"], spec) if case.get("trace") else {"error": "no trace"}
        row = {"workload": workload, "policy": spec, "live_reserved_peak": live.get("reserved_bytes.all.peak"),
               "live_device_calls": live.get("device_calls"),
               "replay_reserved_peak": replayed.get("reserved_peak"),
               "replay_device_calls": replayed.get("device_calls"),
               "replay_error": replayed.get("error"),
               "median_step_s": case["median_step_s"], "warmup_s": case["warmup_s"]}
        row["replay_equal"] = (row["live_reserved_peak"] == row["replay_reserved_peak"] and
                               row["live_device_calls"] == row["replay_device_calls"])
        if native:
            row["values_identical"] = case["values"] == native["values"]
            row["max_value_diff"] = max(abs(a - b) for a, b in zip(case["values"], native["values"]))
            row["native_median_step_s"] = native["median_step_s"]
            row["native_warmup_s"] = native["warmup_s"]
            row["step_time_ratio"] = case["median_step_s"] / native["median_step_s"]
            row["native_reserved_peak"] = native["stats"]["reserved_bytes.all.peak"]
        if expandable:
            row["expandable_reserved_peak"] = expandable["stats"]["reserved_bytes.all.peak"]
        failed |= not row["replay_equal"] or not row.get("values_identical", False)
        rows.append(row)
    streams = cases.get("stream_order", [])
    failed |= any(not s.get("ok", False) for s in streams) or bool(cases.get("errors"))
    summary = {"rows": rows, "stream_order": streams, "errors": cases.get("errors", []), "failed": failed}
    with open(os.path.join(out, "live_policy.json"), "w") as f:
        json.dump(summary, f, indent=1)

    def mib(v):
        return "-" if v is None else f"{v / 2**20:.1f}"

    def ms(v):
        return "-" if v is None else f"{v * 1e3:.2f}"

    lines = ["# Live policies on the GPU", "",
             "| workload | policy | reserved peak live / replay (MiB) | device calls live / replay | equal | "
             "values = native | step ms (native) | warm-up s (native) | native peak | expandable peak |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['workload']} | {r['policy']} | {mib(r['live_reserved_peak'])} / {mib(r['replay_reserved_peak'])} | "
            f"{r['live_device_calls']} / {r['replay_device_calls']} | {'yes' if r['replay_equal'] else 'NO'} | "
            f"{'yes' if r.get('values_identical') else 'NO (max diff %.3g)' % r.get('max_value_diff', float('nan'))} | "
            f"{ms(r['median_step_s'])} ({ms(r.get('native_median_step_s'))}) | "
            f"{r['warmup_s']:.2f} ({r.get('native_warmup_s', float('nan')):.2f}) | "
            f"{mib(r.get('native_reserved_peak'))} | {mib(r.get('expandable_reserved_peak'))} |")
    lines += ["", "| stream-order test | block reused by stream B | reader saw the old values |", "|---|---|---|"]
    lines += [f"| {s.get('allocator')} | {s.get('reused')} | {'yes' if s.get('ok') else 'NO'} |" for s in streams]
    if cases.get("errors"):
        lines += ["", "Failed cases:", ""] + [f"- {e}" for e in cases["errors"]]
    with open(os.path.join(out, "live_policy.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "case":
        run_case(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None)
    elif command == "stream-order":
        stream_order(sys.argv[2], sys.argv[3])
    elif command == "report":
        sys.exit(report(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        sys.exit(f"unknown command {command}")
