import io, contextlib, pickle, sys, inspect
import torch
from torch.cuda import _memory_viz as mv
ident = lambda s: s
for path in sys.argv[1:]:
    d = pickle.load(open(path, "rb"))["segments"]  # torch 1.13 reads the segment list
    res = {}
    for name, call in [("memory", lambda: mv.memory(d, format_flamegraph=ident)),
                       ("segments", lambda: mv.segments(d, format_flamegraph=ident)),
                       ("compare", lambda: mv.compare(d, d, format_flamegraph=ident)),
                       ("stats", lambda: mv.stats(d))]:
        try:
            with contextlib.redirect_stdout(io.StringIO()) as o:
                t = call()
            res[name] = "ok %d chars" % len(t if isinstance(t, str) else o.getvalue())
        except Exception as e:
            res[name] = "FAILED " + repr(e)[:200]
    print(path.split('/')[-1], res)
