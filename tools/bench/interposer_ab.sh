#!/usr/bin/env bash
# What the CUDA interposer costs a program per call and per recorded event (target: at most
# 200 ns per event), measured A/B: tools/bench/interposer_bench runs alternately without (A, plain)
# and with (B) LD_PRELOAD=libmemreplay_interposer.so, ROUNDS times each, the order flipped every
# round (AB BA AB ...) so that a drift of the machine favours neither side.
#
#   tools/bench/interposer_ab.sh [BUILD] [--fake | --real] [--rounds N] [--repetitions N] [--min-time S]
#                          [--batches N] [--pause-us US] [--filter REGEX] [--time real|cpu] [--json FILE]
#
# BUILD: a build directory (tools/interposer_bench, recorder/interposer/, tests/fake_cuda/) or a
# bundle from tools/gpu/bundle.sh (bin/, lib/, lib/fake_cuda/, lib/cudart/, deps/); default build.
#   --fake   against the fake runtime and driver of tests/fake_cuda: a call costs a few ns there,
#            so B - A is the interposer's own cost (wrappers + recording). Default without a GPU.
#   --real   against the real libcudart.so.13 (the bundle's lib/cudart/ when there is one, else
#            the one the binary finds) and the GPU. Default when nvidia-smi lists a GPU.
#   --rounds 7, --repetitions 5 (per run; the run's median is used), --batches (of 1,024 pairs per
#   repetition, the same for A and B; default 64 with --fake, 0 with --real: then --min-time 0.05,
#   seconds per repetition), --pause-us 1000 (untimed sleep after each batch, so that the
#   interposer's writer empties its ring: dropped events are cheaper than recorded ones and would
#   flatter the result; any drop is reported and makes the exit status 1), --filter (benchmarks,
#   default all), --time (headline metric: thread CPU time in --fake mode, where the machine may be
#   shared, real time in --real mode, where driver calls can block), --json (results, default
#   BUILD/interposer_ab.json or $OUT/interposer_ab.json).
# Prints per benchmark: the median over rounds of each run's median ns per pair, plain and
# interposed; the difference per pair, per call and per recorded event; and the median of the
# per-round paired differences per event with its [min, max] over rounds, a distribution-free
# confidence interval for that median (98.4% with 7 rounds). "≤ 200" says yes when the whole
# interval is at most 200 ns, no when all of it is above, "?" when the noise straddles the target.
# Exit status 0 when every run worked, A runs were plain, B runs interposed and nothing was dropped.
set -uo pipefail
cd "$(dirname "$0")/../.."

build=build mode="" rounds=7 repetitions=5 min_time=0.05 batches="" pause_us=1000 filter=. metric="" json=""
positional=0
while (($#)); do
  case $1 in
    --fake) mode=fake ;;
    --real) mode=real ;;
    --rounds) rounds=$2; shift ;;
    --repetitions) repetitions=$2; shift ;;
    --min-time) min_time=$2; shift ;;
    --batches) batches=$2; shift ;;
    --pause-us) pause_us=$2; shift ;;
    --filter) filter=$2; shift ;;
    --time) metric=$2; shift ;;
    --json) json=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "interposer_ab: unknown option $1 (--help)" >&2; exit 2 ;;
    *) ((positional++ == 0)) || { echo "interposer_ab: one BUILD only" >&2; exit 2; }; build=$1 ;;
  esac
  shift
done
if [[ -z "$mode" ]]; then
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then mode=real; else mode=fake; fi
fi
[[ -n "$batches" ]] || { [[ $mode == fake ]] && batches=64 || batches=0; }
[[ -n "$metric" ]] || { [[ $mode == fake ]] && metric=cpu || metric=real; }
[[ $metric == real || $metric == cpu ]] || { echo "interposer_ab: --time real|cpu" >&2; exit 2; }
[[ -n "$json" ]] || json=${OUT:-$build}/interposer_ab.json

first() { for f in "$@"; do [[ -e "$f" ]] && { realpath "$f"; return; }; done; echo ""; }
bench=$(first "$build/bin/interposer_bench" "$build/tools/interposer_bench")
interposer=$(first "$build/lib/libmemreplay_interposer.so" "$build/recorder/interposer/libmemreplay_interposer.so")
fake=$(first "$build/lib/fake_cuda" "$build/tests/fake_cuda")
cudart=$(first "$build/lib/cudart")
deps=$(first "$build/deps")
[[ -n "$bench" ]] || { echo "interposer_ab: no interposer_bench in $build (built without the CUDA toolkit?)" >&2; exit 2; }
[[ -n "$interposer" ]] || { echo "interposer_ab: no libmemreplay_interposer.so in $build" >&2; exit 2; }
if [[ $mode == fake && ! -f "$fake/libcudart.so.13" ]]; then
  echo "interposer_ab: no fake CUDA runtime in $build (tests/fake_cuda: build the tests)" >&2; exit 2
fi

work=$(mktemp -d /tmp/memreplay_interposer_ab.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The runtime first (the fake, or the bundled real one), then of the bundle's other libraries only
# those this machine lacks (libbenchmark, say).
libs="$work/deps"
mkdir -p "$libs"
if [[ -n "$deps" ]]; then
  for lib in $(ldd "$bench" 2>/dev/null | awk '/not found/ { print $1 }'); do
    [[ -f "$deps/$lib" ]] && ln -sf "$deps/$lib" "$libs/$lib"
  done
fi
if [[ $mode == fake ]]; then path="$fake:$libs"; else path="${cudart:+$cudart:}$libs"; fi
runtime=$(LD_LIBRARY_PATH="$path" ldd "$bench" | awk '$1 == "libcudart.so.13" { print $3 }')
echo "interposer_ab: $mode runtime $runtime, interposer $interposer"
echo "  $rounds rounds x $repetitions repetitions of $( ((batches > 0)) && echo "$batches batches of 1024 pairs" || echo "$min_time s"), pause $pause_us us per batch, $metric time"

run() {  # run ROUND VARIANT
  local name="r$1_$2" status
  local -a env=(LD_LIBRARY_PATH="$path" MEMREPLAY_BENCH_PAUSE_US="$pause_us" MEMREPLAY_BENCH_BATCHES="$batches")
  [[ $2 == interposed ]] && env+=(LD_PRELOAD="$interposer" MEMREPLAY_OUTPUT="$work/$name.mrt" MEMREPLAY_QUIET=1)
  env "${env[@]}" "$bench" --benchmark_filter="$filter" --benchmark_repetitions="$repetitions" \
    --benchmark_min_time="$min_time" --benchmark_out="$work/$name.json" --benchmark_out_format=json \
    >"$work/$name.out" 2>"$work/$name.err"
  status=$?
  rm -f "$work"/*.mrt  # the traces only had to be written
  echo "$1 $2 $status" >>"$work/runs.txt"
  printf '  round %d %-10s exit %d%s\n' "$1" "$2" "$status" \
    "$(grep -ho '[0-9]* events were dropped' "$work/$name.err" | sed 's/^/, /')"
  ((status == 0)) || sed 's/^/    | /' "$work/$name.err" | tail -5
}
for ((round = 1; round <= rounds; round++)); do
  if ((round % 2)); then run "$round" plain; run "$round" interposed
  else run "$round" interposed; run "$round" plain; fi
done

mkdir -p "$(dirname "$json")"
python3 - "$work" "$json" "$mode" "$metric" "$runtime" "$interposer" "$rounds" "$repetitions" "$min_time" \
  "$pause_us" "$batches" <<'EOF'
import json, os, re, statistics, sys
work, out, mode, metric, runtime, interposer = sys.argv[1:7]
rounds, repetitions, min_time, pause_us, batches = (int(sys.argv[7]), int(sys.argv[8]), float(sys.argv[9]),
                                                   int(sys.argv[10]), int(sys.argv[11]))
key = "real_time" if metric == "real" else "cpu_time"
problems = []
runs = {}  # (round, variant) -> {benchmark: {...}}
for line in open(os.path.join(work, "runs.txt")):
    r, variant, status = line.split()
    name = f"r{r}_{variant}"
    err = open(os.path.join(work, name + ".err")).read()
    dropped = sum(int(n) for n in re.findall(r"(\d+) events were dropped", err))
    if dropped:
        problems.append(f"round {r} {variant}: {dropped} events dropped")
    if status != "0":
        problems.append(f"round {r} {variant}: exit {status}")
    try:
        doc = json.load(open(os.path.join(work, name + ".json")))
    except Exception as e:
        problems.append(f"round {r} {variant}: no results ({e})")
        continue
    per = {}
    for b in doc.get("benchmarks", []):
        if b.get("run_type") != "iteration":
            continue
        if b.get("error_occurred"):
            problems.append(f"round {r} {variant} {b['run_name']}: {b.get('error_message')}")
            continue
        unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        bench = re.sub(r"^BM_|/iterations:\d+|/real_time$", "", b["run_name"])  # MallocFreePair/1048576
        e = per.setdefault(bench, {"real_time": [], "cpu_time": [], "iterations": 0})
        e["real_time"].append(b["real_time"] * unit)
        e["cpu_time"].append(b["cpu_time"] * unit)
        e["iterations"] += b["iterations"]
        for c in ("calls_per_pair", "events_per_pair", "interposed"):
            e[c] = b.get(c)
    for bench, e in per.items():
        if e["interposed"] != (1 if variant == "interposed" else 0):
            problems.append(f"round {r} {variant} {bench}: interposed={e['interposed']}")
    runs[(int(r), variant)] = {"dropped": dropped, "benchmarks": per}

def run_median(r, variant, bench, which):
    e = runs.get((r, variant), {}).get("benchmarks", {}).get(bench)
    return statistics.median(e[which]) if e and e[which] else None

def summarise(bench, which):
    plain = [run_median(r, "plain", bench, which) for r in range(1, rounds + 1)]
    inter = [run_median(r, "interposed", bench, which) for r in range(1, rounds + 1)]
    paired = [b - a for a, b in zip(plain, inter) if a is not None and b is not None]
    plain_ok, inter_ok = [x for x in plain if x is not None], [x for x in inter if x is not None]
    if not paired:
        return None
    some = next(v["benchmarks"][bench] for v in runs.values() if bench in v["benchmarks"])
    calls, events = some["calls_per_pair"] or 2, some["events_per_pair"] or 2
    p, i = statistics.median(plain_ok), statistics.median(inter_ok)
    lo, med, hi = min(paired) / events, statistics.median(paired) / events, max(paired) / events
    return {
        "plain_ns_per_pair": p, "interposed_ns_per_pair": i,
        "difference_ns_per_pair": i - p, "difference_ns_per_call": (i - p) / calls,
        "difference_ns_per_event": (i - p) / events,
        "paired_difference_ns_per_event": {"median": med, "min": lo, "max": hi, "rounds": len(paired),
                                           "confidence_of_min_max": 1 - 2 * 0.5 ** len(paired)},
        "plain_run_medians_ns": plain, "interposed_run_medians_ns": inter,
        "plain_spread_ns": max(plain_ok) - min(plain_ok), "calls_per_pair": calls, "events_per_pair": events,
        "target_ns_per_event": 200,
        "target_met": True if hi <= 200 else False if lo > 200 else None,
    }

benches = []
for v in runs.values():
    benches += [b for b in v["benchmarks"] if b not in benches]
other = "cpu_time" if key == "real_time" else "real_time"
cases = {b: c for b in benches if (c := summarise(b, key))}
cases_other = {b: c for b in benches if (c := summarise(b, other))}

problems = list(dict.fromkeys(problems))  # a failing benchmark fails each repetition alike
result = {"mode": mode, "metric": metric + " time", "runtime": runtime, "interposer": interposer,
          "rounds": rounds, "repetitions": repetitions, "batches_of_1024_pairs": batches or None,
          "min_time_s": None if batches else min_time, "pause_us_per_batch": pause_us,
          "order": "AB BA AB ...", "cases": cases, "cases_" + other: cases_other, "problems": problems,
          "runs": [{"round": r, "variant": v, **d} for (r, v), d in sorted(runs.items())]}
with open(out, "w") as f:
    json.dump(result, f, indent=2)

print(f"\ninterposer A/B, {mode} runtime, {metric} time, ns; {rounds} rounds x {repetitions} repetitions")
head = ("benchmark", "plain/pair", "interp/pair", "+/pair", "+/call", "+/event", "paired +/event [min, max]", "≤ 200")
rows = [head]
for bench, c in cases.items():
    d = c["paired_difference_ns_per_event"]
    rows.append((bench, f"{c['plain_ns_per_pair']:.1f}",
                 f"{c['interposed_ns_per_pair']:.1f}", f"{c['difference_ns_per_pair']:+.1f}",
                 f"{c['difference_ns_per_call']:+.1f}", f"{c['difference_ns_per_event']:+.1f}",
                 f"{d['median']:+.1f} [{d['min']:+.1f}, {d['max']:+.1f}]",
                 {True: "yes", False: "no", None: "?"}[c["target_met"]]))
widths = [max(len(r[k]) for r in rows) for k in range(len(head))]
for r in rows:
    print("  ".join(r[k].ljust(widths[k]) if k == 0 else r[k].rjust(widths[k]) for k in range(len(r))))
if cases:
    n = next(iter(cases.values()))["paired_difference_ns_per_event"]["rounds"]
    print(f"[min, max] of {n} paired rounds: a {100 * (1 - 2 * 0.5 ** n):.1f}% interval for the median difference")
for p in problems:
    print("PROBLEM:", p)
print("json:", out)
sys.exit(1 if problems or not cases else 0)
EOF
