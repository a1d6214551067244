#!/usr/bin/env bash
# Every policy on the H200 (--device cuda:0) against the simulator, with per-operation latency
# percentiles. One call, on the lent GPU machine (docs/gpu-machine.md):
#   here:   tools/gpu/policies.sh --prepare BUILD BUNDLE   a portable static `memreplay` built in
#           BUILD (MEMREPLAY_PORTABLE, CUDA device included) into BUNDLE/bin, the shared traces
#           imported into BUNDLE/traces, its libraries beyond glibc, this script; carry BUNDLE
#   there:  bash BUNDLE/policies.sh BUNDLE             writes $OUT/gpu_policies.{json,md}
# For each trace and policy: one replay on cuda:0 with --time-operations and one on sim; agreement
# is reserved peak, device calls (cudaMalloc + map, cudaFree + unmap) and the OOM point equal.
# Exit status 0 when every pair agrees.
set -uo pipefail
policies=(pytorch pytorch:expandable_segments:True memreplay gmlake bfc:allow_growth:true
          bfc:memory_limit:16GiB rmm_pool rmm_arena:arena_size:16GiB rmm_binning buddy cuda_async passthrough)
# passthrough's one cudaMalloc per allocation costs ~20 s on gpt2_generate: the smaller traces only.
default_traces=(gpt2_train.default gpt2_train.capped gpt2_train.stacks gpt2_train.truncated multistream_pipeline.default
        resnet50_train.default vit_infer_varbatch.default vit_infer_varbatch.emptycache gpt2_generate.default)
read -r -a traces <<<"${MEMREPLAY_GPU_TRACES:-${default_traces[*]}}"  # fewer, for a quick try

if [ "${1:-}" = "--prepare" ]; then
  build=${2:?BUILD} bundle=${3:?BUNDLE}
  src=$(cd "$(dirname "$0")/../.." && pwd)
  shared=${MEMREPLAY_REAL_DATA_DIR:-$src/tests/data/real}
  cmake -S "$src" -B "$build" -G Ninja -DMEMREPLAY_PORTABLE=ON -DCMAKE_BUILD_TYPE=Release \
    -DMEMREPLAY_BUILD_TESTS=OFF -DMEMREPLAY_BUILD_BENCHMARKS=OFF >/dev/null && ninja -C "$build" memreplay >/dev/null || exit 1
  rm -rf "$bundle"
  mkdir -p "$bundle/bin" "$bundle/traces" "$bundle/libs"
  cp "$build/tools/memreplay" "$bundle/bin/" && strip "$bundle/bin/memreplay"
  for t in "${traces[@]}"; do "$bundle/bin/memreplay" import "$shared/traces/$t.pickle.xz" -o "$bundle/traces/$t.mrt" >/dev/null; done
  ldd "$bundle/bin/memreplay" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
    [[ "$name" =~ ^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libcuda\.so) ]] || cp -L "$path" "$bundle/libs/"
  done
  cp "$0" "$bundle/policies.sh"
  (cd "$src" && git rev-parse --short=12 HEAD) >"$bundle/commit"
  du -sh "$bundle/bin" "$bundle/traces" "$bundle/libs"
  exit 0
fi

bundle=${1:?BUNDLE}
out=${OUT:-$bundle/out}
mkdir -p "$out"
missing=$(mktemp -d)
for library in "$bundle"/libs/*; do
  [ -e "$library" ] || continue
  ldconfig -p | grep -q "^[[:space:]]*$(basename "$library") " || ln -s "$(realpath "$library")" "$missing/"
done
export LD_LIBRARY_PATH="$missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cli=$bundle/bin/memreplay
work=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$work/gpu.txt" 2>&1
budget=${MEMREPLAY_GPU_SECONDS:-140}  # stop starting replays after this long: the table still comes
for t in "${traces[@]}"; do
  for p in "${policies[@]}"; do
    [ "$SECONDS" -lt "$budget" ] || break 2
    [ "$p" = passthrough ] && [ "$t" = gpt2_generate.default ] && continue
    key="$t|$p"
    file=$(echo "$key" | tr -c 'A-Za-z0-9._\n-' '_')
    timeout 60 "$cli" replay "$bundle/traces/$t.mrt" --policy "$p" --device cuda:0 --time-operations \
      --json "$work/$file.cuda.json" >/dev/null 2>"$work/$file.cuda.err"
    "$cli" replay "$bundle/traces/$t.mrt" --policy "$p" --device sim --json "$work/$file.sim.json" >/dev/null 2>"$work/$file.sim.err"
    echo "$key" >>"$work/keys"
  done
done
python3 - "$work" "$out" "$(cat "$bundle/commit" 2>/dev/null)" <<'PY'
import json, os, sys
work, out, commit = sys.argv[1:4]
rows, agree_all = [], True
def load(path):
    try:
        return json.load(open(path))
    except Exception:
        return None
for key in open(os.path.join(work, "keys")).read().split():
    trace, policy = key.split("|")
    file = "".join(c if c.isalnum() or c in "._-" else "_" for c in key)
    cuda, sim = load(f"{work}/{file}.cuda.json"), load(f"{work}/{file}.sim.json")
    err = open(f"{work}/{file}.cuda.err").read().strip().splitlines()
    row = {"trace": trace, "policy": policy, "error": err[-1] if cuda is None and err else None}
    if cuda and sim:
        fields = ["reserved_peak", "device_alloc_calls", "device_free_calls", "oom_at_event"]
        row.update({f: [cuda[f], sim[f]] for f in fields})
        row["agree"] = all(cuda[f] == sim[f] for f in fields)
        row["ratio"] = cuda["reserved_peak"] / cuda["requested_peak"]
        row["replay_seconds"] = cuda["replay_seconds"]
        row["device_call_seconds"] = cuda.get("device_call_seconds")
        row["latency"] = cuda.get("latency")
    else:
        row["agree"] = False
    agree_all &= row["agree"]
    rows.append(row)
gpu = open(os.path.join(work, "gpu.txt")).read().strip()
json.dump({"commit": commit, "gpu": gpu, "rows": rows}, open(f"{out}/gpu_policies.json", "w"), indent=1)
def lat(r, op, kind):
    l = (r.get("latency") or {}).get(op, {}).get(kind, {})
    return f"{l.get('p50_ns', '-')} / {l.get('p99_ns', '-')}" if l.get("count") else "-"
md = [f"GPU: {gpu}; commit {commit}", "",
      "| trace | policy | agree | reserved/requested | allocs cuda/sim | frees cuda/sim | replay s | alloc cached p50/p99 ns | alloc device p50/p99 ns | free cached p50/p99 ns | free device p50/p99 ns |",
      "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
for r in rows:
    if "reserved_peak" not in r:
        md.append(f"| {r['trace']} | {r['policy']} | NO: {r['error']} | | | | | | | | |")
        continue
    md.append(f"| {r['trace']} | {r['policy']} | {'yes' if r['agree'] else 'NO'} | {r['ratio']:.4f} | "
              f"{r['device_alloc_calls'][0]}/{r['device_alloc_calls'][1]} | {r['device_free_calls'][0]}/{r['device_free_calls'][1]} | "
              f"{r['replay_seconds']:.3f} | {lat(r,'allocate','cached')} | {lat(r,'allocate','device_call')} | "
              f"{lat(r,'free','cached')} | {lat(r,'free','device_call')} |")
md += ["", f"**Verdict**: {'all agree' if agree_all else 'some differ'} ({sum(r['agree'] for r in rows)} of {len(rows)})"]
open(f"{out}/gpu_policies.md", "w").write("\n".join(md) + "\n")
print("\n".join(md))
sys.exit(0 if agree_all else 1)
PY
