#!/usr/bin/env bash
# Fleet-sweep scaling on a many-core host (the GPU machine's 16 cores; no GPU used): a synthetic
# fleet of real traces with scaled sizes and shifted times (synthetic_fleet), swept as W
# independent `memreplay sweep --shard I/W -j 1` processes, as an array job's tasks would run, for
# each W; reports tasks/s, the speed-up over one worker, CPU-seconds per task and each worker's
# maximum RSS (target: under 1 GB), and checks that the W shards together hold every task once.
#
# Here (the development machine): a portable build and what to carry.
#   tools/gpu/fleet_scaling.sh --prepare [BUILD]          (default build-fleet)
# There (Python 3.12's standard library only, nothing downloaded), from the repository root:
#   OUT=results tools/gpu/fleet_scaling.sh BUILD [TRACES] [WORKERS...]
#     defaults: 10000 traces, workers 1 2 4 8 16; FLEET_POLICIES (default "pytorch": 10,000 tasks, 4 min at one worker),
#     FLEET_CAPACITIES (default "none"), FLEET_MAX_FACTOR (default 4)
# Then one `memreplay sweep -j N` process on the real traces x 6 policies with fit, for each N of
# FLEET_THREADS (default 1 2 4 8 16; "" skips it), FLEET_ROUNDS interleaved rounds (default 3, medians): the
# threads' scaling, each run's fits held against the first run's.
# A stage that a time limit may cut is written as it ends: run the worker counts in separate calls
# (`... BUILD 10000 1`, then `... BUILD 10000 2 4 8 16`) when one call may not hold them all.
# Output in $OUT: fleet_scaling.md (the table) and fleet_scaling.json; the fleet and the lines in
# $FLEET_DIR (default /tmp/memreplay-fleet-scaling).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" = --prepare ]; then
  build=${2:-build-fleet}
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMREPLAY_PORTABLE=ON -DMEMREPLAY_BUILD_TESTS=OFF \
    -DMEMREPLAY_BUILD_BENCHMARKS=OFF >/dev/null
  ninja -C "$build" memreplay synthetic_fleet >/dev/null
  rm -rf "$build/fleet-traces" "$build/fleet-libs"
  mkdir -p "$build/fleet-traces" "$build/fleet-libs"
  for snapshot in tests/data/real/traces/*.pickle.xz; do
    "$build/tools/memreplay" import "$snapshot" -o "$build/fleet-traces/$(basename "$snapshot" .pickle.xz).mrt" >/dev/null
  done
  for program in "$build/tools/memreplay" "$build/tools/synthetic_fleet"; do ldd "$program" | awk '/=> \// {print $3}'; done |
    sort -u | while read -r library; do
      case $(basename "$library") in
        libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux*) ;;
        *) cp -L "$library" "$build/fleet-libs/" ;;
      esac
    done
  du -shc "$build/tools/memreplay" "$build/tools/synthetic_fleet" "$build/fleet-traces" "$build/fleet-libs"
  echo "carry: [\"$build/tools/memreplay\", \"$build/tools/synthetic_fleet\", \"$build/fleet-traces\", \"$build/fleet-libs\"]"
  exit 0
fi

build=${1:?usage: OUT=DIR $0 BUILD [TRACES] [WORKERS...]   (or $0 --prepare [BUILD] here)}
traces=${2:-10000}
shift $(($# >= 2 ? 2 : 1))
workers=("$@")
((${#workers[@]})) || workers=(1 2 4 8 16)
out=${OUT:?set OUT to the results folder}
mkdir -p "$out"
export LD_LIBRARY_PATH="$build/fleet-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The fleet and the shards' lines stay out of $OUT (a gigabyte and more): only the report travels back.
work=${FLEET_DIR:-/tmp/memreplay-fleet-scaling}
fleet=$work/fleet
python=$(command -v python3)

# The fleet, written once (a second call keeps the files already there).
"$build/tools/synthetic_fleet" --out "$fleet" --count "$traces" --max-factor "${FLEET_MAX_FACTOR:-4}" \
  "$build"/fleet-traces/*.mrt
echo "fleet: $(du -sh "$fleet" | cut -f1) in $fleet; host: $(nproc) CPUs, $(uptime)"

status=0
"$python" - "$build/tools/memreplay" "$fleet/manifest.tsv" "$work" "$out" "$traces" "${workers[@]}" <<'EOF' || status=$?
import json, os, subprocess, sys, time
memreplay, manifest, work, out = sys.argv[1:5]
traces, workers = int(sys.argv[5]), sys.argv[6:]
policies = os.environ.get("FLEET_POLICIES", "pytorch").split()
capacities = os.environ.get("FLEET_CAPACITIES", "none")
flags = [a for p in policies for a in ("--policy", p)] + ["--capacity", capacities]
report = os.path.join(out, "fleet_scaling.json")
stages = json.load(open(report)) if os.path.exists(report) else {}

def stage(count):
    folder = os.path.join(work, f"w{count}")
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    start = time.monotonic()
    running = {}
    for index in range(count):
        command = [memreplay, "sweep", "--manifest", manifest, *flags, "--shard", f"{index}/{count}", "-j", "1",
                   "-o", os.path.join(folder, f"shard-{index}.jsonl")]
        running[subprocess.Popen(command, stderr=subprocess.DEVNULL).pid] = index
    rss, cpu, statuses = [], 0.0, []
    while running:
        pid, status, usage = os.wait4(-1, 0)
        running.pop(pid)
        statuses.append(os.waitstatus_to_exitcode(status))
        rss.append(usage.ru_maxrss * 1024)
        cpu += usage.ru_utime + usage.ru_stime
    wall = time.monotonic() - start
    keys, lines = set(), 0
    for index in range(count):
        for line in open(os.path.join(folder, f"shard-{index}.jsonl")):
            record = json.loads(line)
            keys.add((record["name"], record["policy"], json.dumps(record["capacity"])))
            lines += 1
    expected = traces * len(policies) * len(capacities.split(","))
    return {"workers": count, "tasks": lines, "distinct_tasks": len(keys), "expected_tasks": expected,
            "wall_s": wall, "tasks_per_s": lines / wall, "cpu_s": cpu, "cpu_s_per_task": cpu / lines,
            "max_rss_bytes": max(rss), "exit_statuses": sorted(set(statuses))}

for count in map(int, workers):
    result = stage(count)
    stages[str(count)] = result
    json.dump(stages, open(report, "w"), indent=2)
    print(f"{count:>3} workers: {result['tasks']} tasks in {result['wall_s']:.1f} s, {result['tasks_per_s']:.1f} tasks/s, "
          f"max RSS {result['max_rss_bytes'] / 2**20:.0f} MiB", flush=True)

one = stages.get("1")
rows = ["| workers | tasks | wall s | tasks/s | speed-up | CPU s/task | max RSS per worker | every task once |",
        "|---:|---:|---:|---:|---:|---:|---:|---|"]
ok = True
for key in sorted(stages, key=int):
    s = stages[key]
    once = s["tasks"] == s["distinct_tasks"] == s["expected_tasks"]
    ok = ok and once and s["max_rss_bytes"] < 2**30 and s["exit_statuses"] == [0]
    speedup = f"{s['tasks_per_s'] / one['tasks_per_s']:.2f}x" if one else "-"
    rows.append(f"| {s['workers']} | {s['tasks']} | {s['wall_s']:.1f} | {s['tasks_per_s']:.1f} | {speedup} | "
                f"{s['cpu_s_per_task'] * 1000:.1f} ms | {s['max_rss_bytes'] / 2**20:.0f} MiB | {'yes' if once else 'NO'} |")
table = "\n".join(rows)
text = (f"# Fleet sweep scaling\n\n{traces} synthetic traces, policies {' '.join(policies)}, capacities {capacities}; "
        f"host: {os.cpu_count()} CPUs\n\n{table}\n\nverdict: {'PASS' if ok else 'FAIL'} "
        "(every task once, every worker under 1 GiB RSS, every sweep exit 0)\n")
open(os.path.join(out, "fleet_scaling.md"), "w").write(text)
print(text)
sys.exit(0 if ok else 1)
EOF

# One process on every core: `memreplay sweep -j N` on the real traces x 6 policies with fit (54
# tasks, ~22 replays each), the sweep of the -j1/-j2 target, at each thread count of FLEET_THREADS.
# shellcheck disable=SC2086
"$python" - "$build/tools/memreplay" "$build/fleet-traces" "$work" "$out" ${FLEET_THREADS-1 2 4 8 16} <<'THREADS' || status=$?
import glob, json, os, statistics, subprocess, sys, time
memreplay, traces, work, out, threads = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
policies = ["pytorch", "pytorch:expandable_segments:True", "memreplay", "gmlake", "cuda_async", "rmm_pool"]
paths = sorted(glob.glob(os.path.join(traces, "*.mrt")))
rounds = int(os.environ.get("FLEET_ROUNDS", "3"))
if not threads:
    sys.exit(0)

def sweep(count):
    output = os.path.join(work, f"threads-{count}.jsonl")
    if os.path.exists(output):
        os.remove(output)
    command = [memreplay, "sweep", *paths, "--capacity", "fit", "-j", count, "-o", output]
    for policy in policies:
        command += ["--policy", policy]
    start = time.monotonic()
    child = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    lines = [json.loads(line) for line in open(output)]
    # What the run found, to hold every run against the first: each task's fit, whatever the threads.
    fits = {(l["name"], l["policy"]): json.dumps(l.get("fit"), sort_keys=True) for l in lines}
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "max_rss_bytes": usage.ru_maxrss * 1024,
            "tasks": len(lines), "exit": os.waitstatus_to_exitcode(status)}, fits

runs, first = {count: [] for count in threads}, None
for round in range(rounds):  # interleaved: a slow moment of the host falls on every count alike
    for count in threads:
        run, fits = sweep(count)
        first = first or fits
        run["same_fits_as_first"] = fits == first
        runs[count].append(run)
        print(f"round {round} sweep -j{count}: {run['tasks']} tasks in {run['wall_s']:.2f} s, "
              f"{run['cpu_s']:.1f} s CPU, same fits: {run['same_fits_as_first']}", flush=True)

def median(count, field):
    return statistics.median(r[field] for r in runs[count])

base = median(threads[0], "wall_s")
lines = ["| sweep -j | tasks | wall s (median) | speed-up | CPU s | max RSS | rounds | same fits |",
         "|---:|---:|---:|---:|---:|---:|---|---|"]
for count in threads:
    walls = ", ".join(f"{r['wall_s']:.2f}" for r in runs[count])
    lines.append(f"| {count} | {runs[count][0]['tasks']} | {median(count, 'wall_s'):.2f} | "
                 f"{base / median(count, 'wall_s'):.2f}x | {median(count, 'cpu_s'):.1f} | "
                 f"{max(r['max_rss_bytes'] for r in runs[count]) / 2**20:.0f} MiB | {walls} | "
                 f"{'yes' if all(r['same_fits_as_first'] and r['exit'] == 0 for r in runs[count]) else 'NO'} |")
text = "\n## One process, -j threads (real traces x 6 policies, fit)\n\n" + "\n".join(lines) + "\n"
json.dump(runs, open(os.path.join(out, "fleet_threads.json"), "w"), indent=2)
open(os.path.join(out, "fleet_scaling.md"), "a").write(text)
print(text)
sys.exit(0 if all(r["same_fits_as_first"] and r["exit"] == 0 for rs in runs.values() for r in rs) else 1)
THREADS
exit $status
