"""The workloads of tools/gpu/pool_jobs.py: each job runs inside a fresh process, takes `torch` and
a list to which it appends the private pools it makes, and returns what must stay alive until the
snapshot. JOBS names them; CAPPED_JOBS run under a cap that pool_jobs.py probes for."""


def train_step(opt, loss):
    """Backward through `loss`, one optimizer step, gradients dropped."""
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def job_graphs_shared_pool(torch, pools):
    """Two CUDA graphs, the second captured into the first one's pool, eager work between replays."""
    torch.manual_seed(0)
    lin1 = torch.nn.Linear(1024, 4096, device="cuda")
    lin2 = torch.nn.Linear(4096, 1024, device="cuda")
    x1 = torch.randn(256, 1024, device="cuda")
    x2 = torch.randn(640, 1024, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            lin2(torch.relu(lin1(x1)))
            lin2(torch.relu(lin1(x2)))
    torch.cuda.current_stream().wait_stream(side)
    g1 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g1):
        y1 = lin2(torch.relu(lin1(x1)))
    pools.append({"id": list(g1.pool()), "kind": "graph", "name": "g1 (shared by g2)"})
    g2 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g2, pool=g1.pool()):
        y2 = lin2(torch.relu(lin1(x2))) * 2.0
    for step in range(8):
        g1.replay()
        eager = [torch.empty((step + 1) * 3_000_000 + k * 777_777, dtype=torch.uint8, device="cuda")
                 for k in range(4)]
        total = y1.sum() + eager[0][:16].float().sum()
        del eager
        g2.replay()
        w = torch.randn(1000 + step * 517, 2000, device="cuda") @ torch.randn(2000, 300, device="cuda")
        total = total + w.sum() + y2.sum()
        del w
    torch.cuda.synchronize()
    return [g1, g2, y1, y2]  # alive until the snapshot


def job_mempool_kv_cache(torch, pools):
    """A MemPool holding a KV cache that grows every step, beside eager attention compute."""
    torch.manual_seed(0)
    pool = torch.cuda.MemPool()
    pools.append({"id": list(pool.id), "kind": "mempool", "name": "kv cache"})
    batch, heads, dim = 4, 8, 64
    q_proj = torch.randn(heads * dim, heads * dim, device="cuda")
    with torch.cuda.use_mem_pool(pool):
        k_cache = torch.empty(batch, heads, 0, dim, device="cuda")
        v_cache = torch.empty(batch, heads, 0, dim, device="cuda")
    x = torch.randn(batch, 128, heads * dim, device="cuda")
    for step in range(40):
        tokens = 128 if step == 0 else 1 + step % 3
        h = torch.randn(batch, tokens, heads * dim, device="cuda") @ q_proj
        kv = h.view(batch, tokens, heads, dim).transpose(1, 2)
        with torch.cuda.use_mem_pool(pool):
            k_cache = torch.cat([k_cache, kv], dim=2)
            v_cache = torch.cat([v_cache, kv * 0.5], dim=2)
        q = kv[:, :, -1:, :]
        scores = torch.softmax(q @ k_cache.transpose(-1, -2) / dim ** 0.5, dim=-1)
        out = (scores @ v_cache).transpose(1, 2).reshape(batch, 1, heads * dim)
        x = torch.cat([x[:, 1:], out], dim=1) if step % 5 else x * 1.0
        del h, kv, q, scores, out
    torch.cuda.synchronize()
    return [pool, k_cache, v_cache, x]


def job_graphed_callables(torch, pools):
    """torch.cuda.make_graphed_callables on a small MLP, trained a few steps."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sample = torch.randn(128, 512, device="cuda", requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(model, (sample,))
    for step in range(10):
        x = torch.randn(128, 512, device="cuda")
        y = graphed(x)
        train_step(opt, (y * y).mean())
        extra = torch.randn(300 + 40 * step, 900, device="cuda").relu().sum()
        del extra
    torch.cuda.synchronize()
    pools.append({"id": None, "kind": "graph", "name": "make_graphed_callables (forward and backward graphs)"})
    return [graphed, model, opt]


def job_compile_reduce_overhead(torch, pools):
    """torch.compile(mode="reduce-overhead"): cudagraph trees on their own private pool."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).cuda()
    compiled = torch.compile(model, mode="reduce-overhead")
    outs = []
    with torch.no_grad():
        for step in range(12):
            x = torch.randn(64, 256, device="cuda")
            torch.compiler.cudagraph_mark_step_begin()
            y = compiled(x)
            outs.append(y.clone())
            if len(outs) > 3:
                outs.pop(0)
            z = torch.randn(200 + 50 * step, 700, device="cuda").sum()
            del z
    torch.cuda.synchronize()
    pools.append({"id": None, "kind": "graph", "name": "cudagraph trees"})
    return [compiled, model, outs]


def varying_training(torch, steps=24):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096),
                                torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sizes = [int(x) for x in torch.randint(64, 3072, (steps,), generator=torch.Generator().manual_seed(1))]
    for batch in sizes:
        x = torch.randn(batch, 1024, device="cuda")
        train_step(opt, model(x).float().pow(2).mean())
    torch.cuda.synchronize()
    return [model, opt]


def job_capped_retry(torch, pools):
    """Varying-shape training capped just above its allocated peak, so it needs release-and-retry."""
    return varying_training(torch)


def job_empty_cache_steps(torch, pools):
    """Varying-shape inference with torch.cuda.empty_cache() every 5th step (true empty_cache calls)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
    with torch.no_grad():
        for step in range(20):
            x = torch.randn(64 + 97 * step % 1500, 1024, device="cuda")
            model(x).sum()
            if step % 5 == 4:
                torch.cuda.empty_cache()
    torch.cuda.synchronize()
    return [model]


def job_graph_release(torch, pools):
    """A CUDA graph used, then destroyed, then empty_cache: PyTorch frees its private pool's
    segments only then; eager work and a second graph (a new pool) follow."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(2048, 2048, device="cuda")
    x = torch.randn(512, 2048, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(2):
            lin(x).relu()
    torch.cuda.current_stream().wait_stream(side)
    g1 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g1):
        y1 = lin(x).relu() * 3.0
    pools.append({"id": list(g1.pool()), "kind": "graph", "name": "g1 (destroyed)"})
    for step in range(4):
        g1.replay()
        t = torch.empty(4_000_000 + step * 1_500_000, dtype=torch.uint8, device="cuda")
        del t
    del g1, y1
    torch.cuda.empty_cache()
    eager = [torch.empty(3_000_000 * (k + 1), dtype=torch.uint8, device="cuda") for k in range(6)]
    del eager
    g2 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g2):
        y2 = lin(x * 0.5)
    pools.append({"id": list(g2.pool()), "kind": "graph", "name": "g2"})
    g2.replay()
    torch.cuda.synchronize()
    return [g2, y2]


def job_graphs_eager_between(torch, pools):
    """Two CUDA graphs in one private pool, with eager work between the captures and between the
    replays. Each captured step frees a large temporary inside the capture, so the pool holds an
    entirely free segment when the second capture's torch.cuda.graph() empties the cache."""
    torch.manual_seed(0)
    lin1 = torch.nn.Linear(1024, 4096, device="cuda")
    lin2 = torch.nn.Linear(4096, 1024, device="cuda")
    x1 = torch.randn(256, 1024, device="cuda")
    x2 = torch.randn(512, 1024, device="cuda")

    def body(x):
        scratch = torch.ones(6_000_000 + x.shape[0] * 4096, device="cuda")
        h = torch.relu(lin1(x)) + scratch[:1]
        del scratch
        return lin2(h)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            body(x1)
            body(x2)
    torch.cuda.current_stream().wait_stream(side)
    g1 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g1):
        y1 = body(x1)
    pools.append({"id": list(g1.pool()), "kind": "graph", "name": "g1 (shared by g2)"})
    kept = []
    for k in range(5):  # eager work between the captures: some kept, most dropped
        t = torch.empty(2_500_000 * (k + 1) + 333_333, dtype=torch.uint8, device="cuda")
        if k % 2:
            kept.append(t)
    g2 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g2, pool=g1.pool()):
        y2 = body(x2) * 2.0
    total = torch.zeros((), device="cuda")
    for step in range(8):
        g1.replay()
        eager = [torch.empty((step + 2) * 1_900_000 + k * 555_555, dtype=torch.uint8, device="cuda") for k in range(3)]
        total += y1.sum() + eager[0][:8].float().sum()
        del eager
        g2.replay()
        w = torch.randn(700 + step * 311, 1500, device="cuda") @ torch.randn(1500, 400, device="cuda")
        total += w.sum() + y2.sum()
        del w
    torch.cuda.synchronize()
    return [g1, g2, y1, y2, kept, total]


def job_graphs_pool_released(torch, pools):
    """job_graphs_eager_between, then its graphs dropped and the cache emptied (their pool's segments
    go before the snapshot, so the snapshot no longer names that pool), then eager work and a new
    graph in a pool of its own."""
    keep = job_graphs_eager_between(torch, pools)
    del keep
    torch.cuda.empty_cache()
    lin = torch.nn.Linear(2048, 2048, device="cuda")
    x = torch.randn(384, 2048, device="cuda")
    for step in range(4):
        t = [torch.empty(3_000_000 + step * 1_200_000 + k * 900_000, dtype=torch.uint8, device="cuda") for k in range(3)]
        del t
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        lin(x).relu()
    torch.cuda.current_stream().wait_stream(side)
    g3 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g3):
        y3 = lin(x).relu() * 0.5
    pools[0]["name"] = "g1 (shared by g2; released)"
    pools.append({"id": list(g3.pool()), "kind": "graph", "name": "g3"})
    for _ in range(3):
        g3.replay()
        w = torch.randn(1200, 2048, device="cuda").sum()
        del w
    torch.cuda.synchronize()
    return [g3, y3]


def job_compile_default_training(torch, pools):
    """torch.compile (default mode, Inductor without CUDA graphs) on a small transformer block,
    AdamW training steps at two sequence lengths (a recompile for the second)."""
    torch.manual_seed(0)
    width = 512
    block = torch.nn.TransformerEncoderLayer(width, 8, 4 * width, dropout=0.0, batch_first=True,
                                             norm_first=True).cuda()
    head = torch.nn.Linear(width, 1000).cuda()
    model = torch.nn.Sequential(block, head)
    compiled = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(10):
        seq = 128 if step < 6 else 192
        x = torch.randn(16, seq, width, device="cuda")
        train_step(opt, compiled(x).float().pow(2).mean())
    torch.cuda.synchronize()
    return [compiled, model, opt]


def job_capped_varlen(torch, pools):
    """Variable-length transformer training capped just above its allocated peak: release-and-retry
    inside the backward pass, right after frees, recorded without stacks."""
    torch.manual_seed(0)
    width = 768
    model = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(width, 12, 4 * width, dropout=0.0, batch_first=True, norm_first=True), 4,
        enable_nested_tensor=False).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    lengths = [int(x) for x in torch.randint(64, 1024, (16,), generator=torch.Generator().manual_seed(5))]
    for seq in lengths:
        x = torch.randn(8, seq, width, device="cuda")
        train_step(opt, model(x).float().pow(2).mean())
    torch.cuda.synchronize()
    return [model, opt]


def job_models_in_turn(torch, pools):
    """Three models loaded, run and dropped in turn, with empty_cache between them."""
    torch.manual_seed(0)
    shapes = [(2048, 8192, 4), (1024, 4096, 8), (3072, 3072, 3)]
    for width, hidden, depth in shapes:
        layers = []
        for _ in range(depth):
            layers += [torch.nn.Linear(width, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, width)]
        model = torch.nn.Sequential(*layers).cuda()
        with torch.no_grad():
            for batch in (64, 512, 128, 1024, 256):
                model(torch.randn(batch, width, device="cuda")).sum()
        del model, layers
        torch.cuda.empty_cache()
    torch.cuda.synchronize()
    return []


def job_varlen_checkpointing(torch, pools):
    """A llama-like decoder trained at variable sequence lengths with activation checkpointing."""
    import torch.utils.checkpoint as checkpoint

    torch.manual_seed(0)
    width, depth = 1024, 6
    blocks = torch.nn.ModuleList(
        torch.nn.TransformerEncoderLayer(width, 16, 4 * width, dropout=0.0, batch_first=True, norm_first=True,
                                         activation="gelu") for _ in range(depth)).cuda()
    opt = torch.optim.AdamW(blocks.parameters(), lr=1e-4)
    lengths = [int(x) for x in torch.randint(96, 1536, (14,), generator=torch.Generator().manual_seed(7))]
    for seq in lengths:
        h = torch.randn(4, seq, width, device="cuda", requires_grad=True)
        for block in blocks:
            h = checkpoint.checkpoint(block, h, use_reentrant=False)
        train_step(opt, h.float().pow(2).mean())
    torch.cuda.synchronize()
    return [blocks, opt]


def job_varres_fcn(torch, pools):
    """A fully convolutional segmentation net (encoder-decoder) trained at varying image sizes."""
    torch.manual_seed(0)
    nn = torch.nn

    def conv(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

    model = nn.Sequential(conv(3, 32), nn.MaxPool2d(2), conv(32, 64), nn.MaxPool2d(2), conv(64, 128),
                          nn.Upsample(scale_factor=2), conv(128, 64), nn.Upsample(scale_factor=2), conv(64, 32),
                          nn.Conv2d(32, 21, 1)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sizes = [(256, 256), (384, 512), (320, 320), (512, 384), (448, 448), (256, 512), (384, 384), (512, 512)]
    for h, w in sizes:
        x = torch.randn(8, 3, h, w, device="cuda")
        target = torch.randint(0, 21, (8, h, w), device="cuda")
        train_step(opt, nn.functional.cross_entropy(model(x), target))
    torch.cuda.synchronize()
    return [model, opt]


JOBS = {
    "graphs_shared_pool": job_graphs_shared_pool,
    "mempool_kv_cache": job_mempool_kv_cache,
    "graphed_callables": job_graphed_callables,
    "compile_reduce_overhead": job_compile_reduce_overhead,
    "capped_retry": job_capped_retry,
    "empty_cache_steps": job_empty_cache_steps,
    "graph_release": job_graph_release,
    "graphs_eager_between": job_graphs_eager_between,
    "graphs_pool_released": job_graphs_pool_released,
    "compile_default_training": job_compile_default_training,
    "capped_varlen": job_capped_varlen,
    "models_in_turn": job_models_in_turn,
    "varlen_checkpointing": job_varlen_checkpointing,
    "varres_fcn": job_varres_fcn,
}
# Jobs run under a cap found by probing: the smallest multiple of the uncapped allocated peak that
# completes with at least one release-and-retry.
CAPPED_JOBS = ("capped_retry", "capped_varlen")
