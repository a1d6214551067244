#!/bin/bash
# On the H200 host: replay speed of b07b8e6 (base), 06e1161 (head) and the fourth session's build (new).
cd "$(dirname "$0")"
B=$PWD
mkdir -p /work/main /work/baseline /work/shared/traces 2>/dev/null || echo "cannot create /work"
cp gpt2_generate.default.pickle.xz /work/shared/traces/ || echo "cannot copy trace"
nproc; grep -m1 "model name" /proc/cpuinfo; cat /proc/loadavg
export LD_LIBRARY_PATH=$B/deps
cat > $B/new <<X
#!/bin/bash
LD_LIBRARY_PATH=$B/newlib:$B/deps exec $B/bin/new_replay_bench "\$@"
X
cat > $B/head <<X
#!/bin/bash
LD_LIBRARY_PATH=$B/headlib:$B/deps exec $B/bin/head_replay_bench "\$@"
X
cat > $B/base <<X
#!/bin/bash
LD_LIBRARY_PATH=$B/deps exec $B/bin/base_replay_bench "\$@"
X
chmod +x $B/new $B/head $B/base
$B/new --benchmark_filter='Gpt2Generate/pytorch$' --benchmark_min_time=0.2 2>&1 | tail -2
bash best_of_replay.sh $B/base $B/new 12 | tee $OUT/best_of_base_new.txt
bash best_of_replay.sh $B/head $B/new 8 | tee $OUT/best_of_head_new.txt
bash best_of_replay.sh $B/base $B/new 8 pytorch_expandable | tee $OUT/best_of_base_new_expandable.txt
LD_LIBRARY_PATH=$B/newlib:$B/deps $B/bin/policy_bench --benchmark_filter=BM_Policy --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1 | tee $OUT/policy_bench.txt | grep -E "median|Policy" | head -40
