# memreplay's memory-viz export read by torch's own tools (torch.cuda._memory_viz), on
# the GPU machine's torch; and a real snapshot from this GPU to round-trip back home.
# SNAPS (default build-h12/snaps) holds `memreplay export --to memory-viz` outputs, xz-compressed.
# H12_CLI=0 skips torch's command line (each call imports torch again: seconds), H12_REAL=0 the
# real snapshot, to fit a short device-time share.
import contextlib, glob, io, json, lzma, os, pickle, shutil, subprocess, sys, time

out = os.environ.get("OUT", "/tmp/out")
os.makedirs(out, exist_ok=True)
import torch
from torch.cuda import _memory_viz as mv

results = {"torch": torch.__version__, "cuda": torch.cuda.is_available(), "snapshots": {}}
ident = lambda s: s
tmp = "/tmp/h12_snaps"
os.makedirs(tmp, exist_ok=True)
for path in sorted(glob.glob(os.path.join(os.environ.get("SNAPS", "build-h12/snaps"), "*.pickle.xz"))):
    name = os.path.basename(path)[: -len(".pickle.xz")]
    plain = os.path.join(tmp, name + ".pickle")
    with lzma.open(path) as f, open(plain, "wb") as g:
        shutil.copyfileobj(f, g)
    with open(plain, "rb") as f:
        data = pickle.load(f)
    r = {"segments": len(data["segments"]), "entries": len(data["device_traces"][0])}
    calls = [("segsum", lambda: mv.segsum(data)), ("trace", lambda: mv.trace(data)),
             ("segments", lambda: mv.segments(data, format_flamegraph=ident)),
             ("memory", lambda: mv.memory(data, format_flamegraph=ident)),
             ("compare", lambda: mv.compare(data["segments"], data["segments"], format_flamegraph=ident)),
             ("trace_plot", lambda: mv.trace_plot(data)), ("segment_plot", lambda: mv.segment_plot(data))]
    for fn, call in calls:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                text = call()
            r[fn] = {"ok": True, "chars": len(text), "head": text[:240]}
        except Exception as e:
            r[fn] = {"ok": False, "error": repr(e)[:600]}
    # torch's command line, as a user runs it
    for cmd in () if os.environ.get("H12_CLI", "1") == "0" else (["stats"], ["trace_plot", "-o", os.path.join(tmp, name + ".trace.html")],
                ["segment_plot", "-o", os.path.join(tmp, name + ".segment.html")]):
        p = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", cmd[0], plain] + cmd[1:],
                           capture_output=True, text=True, timeout=120)
        r["cli_" + cmd[0]] = {"rc": p.returncode, "stdout": p.stdout[-300:], "stderr": p.stderr[-600:]}
    results["snapshots"][name] = r
    print(name, {k: (v["ok"] if isinstance(v, dict) and "ok" in v else v.get("rc") if isinstance(v, dict) else v)
                 for k, v in r.items()}, flush=True)

# A real snapshot from this GPU (small training loop), for the round trip at home.
if torch.cuda.is_available() and os.environ.get("H12_REAL", "1") != "0":
    torch.cuda.memory._record_memory_history(max_entries=200000)
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(8)]).cuda()
    opt = torch.optim.Adam(model.parameters())
    for step in range(5):
        x = torch.randn(256, 2048, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step == 2:
            torch.cuda.empty_cache()
    torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(os.path.join(out, "real_snapshot.pickle"))
    results["real"] = {"max_memory_reserved": torch.cuda.max_memory_reserved(),
                       "num_alloc_retries": torch.cuda.memory_stats()["num_alloc_retries"],
                       "num_device_alloc": torch.cuda.memory_stats().get("num_device_alloc"),
                       "num_device_free": torch.cuda.memory_stats().get("num_device_free")}
viz_js = os.path.join(os.path.dirname(torch.__file__), "utils", "viz", "MemoryViz.js")
results["memory_viz_js_shipped"] = os.path.exists(viz_js)
if os.path.exists(viz_js):
    shutil.copy(viz_js, os.path.join(out, "MemoryViz.js"))
with open(os.path.join(out, "memory_viz_proof.json"), "w") as f:
    json.dump(results, f, indent=1)
print("done", json.dumps(results.get("real")), "MemoryViz.js shipped:", results["memory_viz_js_shipped"])
