#!/usr/bin/env bash
# Packs what tools/gpu/pool_capture.sh needs on the GPU machine into one folder to carry
# (docs/gpu-machine.md): run HERE after building BUILD (default build):
#   tools/gpu/pool_prepare.sh BUILD DEST
# DEST gets the scripts, the memreplay.torch package and the C headers its tracker is built
# against (src/), libmemreplay_record.so (lib/), memreplay and the libraries it needs beyond glibc
# (bin/, deps/), the pool jobs' snapshots and live stats (pools/), their imported traces and the
# replay list for the cuda-vs-sim check (traces/).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
dest=${2:?destination folder}
rm -rf "$dest"
mkdir -p "$dest"/{src/recorder/live,src/python,lib,bin,deps,pools,traces}
cp tools/gpu/pool_jobs.py tools/gpu/pool_job_workloads.py tools/gpu/torch_replay.py tools/gpu/pool_capture.sh "$dest/"
cp -r python/memreplay "$dest/src/python/"
find "$dest/src" -name __pycache__ -prune -exec rm -rf {} +
cp recorder/live/memreplay_record.h recorder/live/memreplay_record_loader.h "$dest/src/recorder/live/"
cp "$build/recorder/live/libmemreplay_record.so" "$dest/lib/"
cp "$build/tools/memreplay" "$dest/bin/"
core='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+|libcuda\.so)'
ldd "$build/tools/memreplay" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
  [[ "$name" =~ $core ]] || cp -L "$path" "$dest/deps/$name"
done
cp tests/data/pools/*.pickle.xz tests/data/pools/*.live.json "$dest/pools/"
: >"$dest/traces/replays.txt"
for snapshot in tests/data/pools/*.pickle.xz; do
  job=$(basename "$snapshot" .pickle.xz)
  "$build/tools/memreplay" import "$snapshot" -o "$dest/traces/$job.mrt" >/dev/null
done
# One line per PyTorch replay row: trace, policy, capacity (0 = none).
python3 - "$dest/traces/replays.txt" <<'PY'
import glob, json, os, sys
with open(sys.argv[1], "w") as out:
    for row in sorted(glob.glob("tests/data/pools/replay/*.json")):
        r = json.load(open(row))
        job = r["snapshot"].split(".pickle")[0]
        policy = "pytorch" + (":" + r["alloc_conf"] if r["alloc_conf"] else "")
        out.write(f"{job} {os.path.basename(row)[:-5]} {policy} {r['run']['cap_bytes'] or 0}\n")
PY
du -sh "$dest"
