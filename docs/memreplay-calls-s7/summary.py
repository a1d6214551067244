# Counts for the growth placements of an MR_TRACE log (docs/memreplay-policy-calls.md, section 7).
# usage: summary.py LOG   (reads LOG with classify.py's parser)
import os, sys, statistics as st
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'classify.py')).read().split("def fmt")[0])
PAGE=2<<20
rows=[]
for g, ranges, snap in events:
    req=g['req']; slack=g['mapped']-g['live']
    front=0; holes=[]; 
    for s,e,runs in ranges:
        mb=sum(min(b,e)-max(a,s) for a,b in runs)
        lo=-(-s//PAGE)*PAGE; hi=e//PAGE*PAGE
        # range with an unmapped whole page: frontier-like
        cov=sum(max(0,min(b,hi)-max(a,lo)) for a,b in runs)
        if hi>lo and cov < hi-lo: front+=mb
        else: holes.append(mb)
    cat='H' if slack<req else 'F'
    rows.append((cat,req,front,holes,g))
F=[r for r in rows if r[0]=='F']
print("growth placements",len(rows),"H-forced",len(rows)-len(F),"slack>=req",len(F))
M=2**20
print("req sizes (MiB) of F:", sorted(set(round(r[1]/M,2) for r in F)))
import collections
print("req size counts:", collections.Counter(round(r[1]/M,2) for r in F))
fr=[r[2]/M for r in F]; hs=[sum(r[3])/M for r in F]; nh=[len([h for h in r[3] if h>0]) for r in F]; lh=[max(r[3])/M if r[3] else 0 for r in F]
for name,v in [("mapped free in ranges with unmapped pages (frontier)",fr),("mapped free in holes between live blocks",hs),("holes (count)",nh),("largest hole",lh)]:
    print(f"{name}: min {min(v):.1f} median {st.median(v):.1f} max {max(v):.1f}")
print("F with req <= frontier+largest hole:", sum(1 for r in F if r[1] <= r[2]+ (max(r[3]) if r[3] else 0)))
print("F where frontier+holes >= req but frontier < req:", sum(1 for r in F if r[2] < r[1] <= r[2]+sum(r[3])))
print("holes < req (all holes smaller than req):", sum(1 for r in F if all(h < r[1] for h in r[3])))
print("holes < 3 MiB share of hole bytes at F events: %.2f" % (sum(sum(h for h in r[3] if h < 3*M) for r in F)/sum(sum(r[3]) for r in F)))
