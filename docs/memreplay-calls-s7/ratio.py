# The highest mapped / H of an MR_TRACE log, above several H (docs/memreplay-policy-calls.md, section 7).
# usage: ratio.py LOG
import sys
if len(sys.argv) < 2:
    sys.exit("usage: ratio.py LOG")
try:
    rows=[tuple(map(int,l.split()[1:3])) for l in open(sys.argv[1]) if l.startswith('M ')]
except OSError as e:
    sys.exit(f"cannot read the MR_TRACE log: {e}")
for th in [0, 16<<20, 64<<20, 256<<20, 1<<30]:
    r=[(m/h,m,h) for m,h in rows if h>=th and h>0]
    if r: x=max(r); print(f"H>={th>>20}MiB max mapped/H {x[0]:.4f} (mapped {x[1]>>20} MiB at H {x[2]/2**20:.1f} MiB)")
