# Classifies the growth placements of an MR_TRACE log (docs/memreplay-calls-s7/experiments.patch):
# usage: classify.py LOG [all]  (without `all`, only those with mapped - live >= the request)
import sys, collections
PAGE = 2 << 20
MiB = 1 << 20
if len(sys.argv) < 2:
    sys.exit("usage: classify.py LOG [all]")
try:
    lines = open(sys.argv[1]).read().split('\n')
except OSError as e:
    sys.exit(f"cannot read the MR_TRACE log: {e}")
verbose = len(sys.argv) > 2
live = {}          # addr -> (seq, size)
freed_at = {}      # alloc seq -> free seq
size_of = {}
events = []        # (G dict, ranges, live snapshot)
i = 0
cur = None
for ln in lines:
    if not ln: continue
    t = ln.split()
    if t[0] == 'A':
        seq, addr, size = map(int, t[1:4]); live[addr] = (seq, size); size_of[seq] = size
        if cur is not None: events.append(cur); cur = None
    elif t[0] == 'F':
        a, f = int(t[1]), int(t[2]); freed_at[a] = f
        for k, v in list(live.items()):
            if v[0] == a: del live[k]; break
    elif t[0] == 'G':
        if cur is not None: events.append(cur)
        g = dict(seq=int(t[1])); kv = t[2:]
        for j in range(0, len(kv) - 1, 2):
            g[kv[j]] = int(kv[j + 1])
        cur = [g, [], dict(live)]
    elif t[0] == 'R':
        s, e = int(t[1]), int(t[2]); runs = [tuple(map(int, x.split(':'))) for x in t[3:]]
        cur[1].append((s, e, runs))
if cur is not None: events.append(cur)

def fmt(b): return f"{b / MiB:.1f}"
ends = {}
cats = collections.Counter()
rows = []
for g, ranges, snap in events:
    req = g['req']; H = g['H']; livereq = g['live']; mapped = g['mapped']
    slack = mapped - livereq
    is_growth = mapped + g['new'] <= H + max(req + livereq - H, 0) + (H + req) // 52 + 4 * PAGE  # rough
    newH = max(H, livereq + req)
    windows = []   # (len, s, e, range s, range e)
    whole_free = 0
    for s, e, runs in ranges:
        for a, b in runs:
            windows.append((b - a, a, b, s, e))
            lo = -(-max(a, s) // PAGE) * PAGE; hi = min(b, e) // PAGE * PAGE
            if hi > lo: whole_free += hi - lo
    windows.sort(reverse=True)
    free_mapped = mapped - g['liveb']
    largest = windows[0][0] if windows else 0
    if slack < req:
        cat = 'H'   # forced by H: mapped minus live requested is less than the request
    elif free_mapped < g['size']:
        cat = 'round'
    elif whole_free >= g['size']:
        cat = 'scattered-cached'   # whole free cached pages would hold it, in no single window
    else:
        cat = 'edge-pages'         # only with the free parts of partly used pages
    cats[cat] += 1
    rows.append((g, cat, slack, free_mapped, whole_free, windows[:4], snap))

print("categories:", dict(cats))
addr2 = None
for g, cat, slack, fm, wf, wins, snap in rows:
    if cat == 'H' and not verbose: continue
    def blk(addr_end=None, addr_start=None):
        for a, (sq, sz) in snap.items():
            if addr_end is not None and a + sz == addr_end: return (sq, sz)
            if addr_start is not None and a == addr_start: return (sq, sz)
        return None
    desc = []
    for (ln, a, b, s, e) in wins[:3]:
        left = blk(addr_end=s) if a == s else None
        right = blk(addr_start=e) if b == e else None
        def lt(x):
            if x is None: return '-'
            sq, sz = x; f = freed_at.get(sq)
            return f"{fmt(sz)}M@{sq}..{f if f else 'end'}"
        desc.append(f"[{fmt(ln)}M in free {fmt(e - s)}M | L {lt(left)} R {lt(right)}]")
    print(f"#{g['seq']} {cat} req {fmt(g['req'])}M H {fmt(g['H'])}M live {fmt(g['live'])}M mapped {fmt(g['mapped'])}M "
          f"slack {fmt(slack)}M freemapped {fmt(fm)} wholefree {fmt(wf)} new {fmt(g['new'])}M ranges {len(wins)} :: " + ' '.join(desc))
