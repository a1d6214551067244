#!/bin/bash
# Three interleaved rounds: the session's start binary (c9ca697) then this branch, every BM_Policy.
out=/work/wt5-11s/docs/policy-speed-2026-12-01-s5; mkdir -p $out
{ date -u; uptime; } > $out/bench_load.txt
for r in 1 2 3; do
  /work/s5-base/policy_bench --benchmark_filter=BM_Policy --benchmark_format=json > /tmp/s11s/bench_base_$r.json 2>/dev/null
  uptime >> $out/bench_load.txt
  /work/wt5-11s/build/tools/policy_bench --benchmark_filter=BM_Policy --benchmark_format=json > /tmp/s11s/bench_new_$r.json 2>/dev/null
  uptime >> $out/bench_load.txt
done
