#!/bin/bash
# usage: replay_md5.sh MEMREPLAY_BINARY OUTFILE  (TRACES: a folder of the nine shared traces, each
# imported once with `memreplay import /work/shared/traces/NAME.pickle.xz -o NAME.mrt`)
# One md5 per trace x policy spec x (uncapped, 3GiB cap): replay --json without its timings.
bin=$1; out=$2; : > $out
specs="bfc bfc:allow_growth:True buddy cuda_async cuda_async:release_threshold:0 cuda_async:release_threshold:64MiB,reuse_allow_opportunistic:false cuda_async:reuse_follow_event_dependencies:False,reuse_allow_internal_dependencies:False gmlake memreplay passthrough pytorch pytorch:expandable_segments:True rmm_arena rmm_binning rmm_pool"
for t in ${TRACES:-/tmp/s11s/traces}/*.mrt; do
  for p in $specs; do
    for cap in none 3GiB; do
      if [ $cap = none ]; then a=""; else a="--capacity $cap --keep-going"; fi
      $bin replay $t --policy $p $a --json - 2>/dev/null | jq -S 'del(.replay_seconds, .device_call_seconds, .latency)' | md5sum | sed "s|-|$(basename $t) $p $cap|" >> $out
    done
  done
done
