#!/usr/bin/env bash
# The Slurm recipe end to end on this machine: a one-node Slurm (Debian's slurm-wlm, munge)
# started in a scratch folder, the real traces swept as a 4-task array (submit.sh, sweep.sbatch)
# with the summary job after it, and the result checked against a local `memreplay sweep` of the
# same manifest: every task's line the same (but its run time), the merged summary the same.
# Needs root (slurmd runs the jobs as their user) on Debian 12; installs slurm-wlm and munge when
# they are missing. Everything it starts is stopped on exit; KEEP=1 keeps the scratch folder.
#   tools/slurm/test_single_node.sh [BUILD]        (default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
memreplay=$(realpath "${1:-build}/tools/memreplay")
shards=4
flags=(--policy pytorch --policy pytorch:expandable_segments:True --policy memreplay --capacity none,fit --grid 8)

if [ "$(id -u)" -ne 0 ]; then
  echo "test_single_node: needs root (slurmd runs jobs as their user)" >&2
  exit 2
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge
fi

work=$(mktemp -d /tmp/memreplay-slurm.XXXXXX)
pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ "${KEEP:-0}" = 1 ] && echo "test_single_node: kept $work" || rm -rf "$work"
}
trap stop EXIT
fail() {
  echo "test_single_node: FAIL: $*" >&2
  for log in "$work"/*.log "$work"/out/*.log; do [ -f "$log" ] && { echo "== $log"; tail -20 "$log"; } >&2; done
  exit 1
}
wait_for() {  # wait_for SECONDS WHAT COMMAND...
  local seconds=$1 what=$2
  shift 2
  for ((i = 0; i < seconds * 10; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "$what did not happen within ${seconds}s"
}

# munge: a key of this run's own, on a socket of its own.
mkdir -m 700 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --force --foreground --key-file="$work/munge/munge.key" --socket="$work/munge/socket" \
  --pid-file="$work/munge/pid" --seed-file="$work/munge/seed" --log-file="$work/munged.log" >>"$work/munged.log" 2>&1 &
pids+=($!)
wait_for 10 "munged's socket" test -S "$work/munge/socket"

# Slurm: controller and one node on localhost, ports drawn from this process id.
node=$(hostname -s)
port=$((20000 + ($$ % 4000) * 2))
mkdir -p "$work/state" "$work/spool" "$work/out"
cat >"$work/slurm.conf" <<EOF
ClusterName=memreplay-test
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
$(slurmd -C | head -1) NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >>"$work/slurmctld.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >>"$work/slurmd.log" 2>&1 &
pids+=($!)
wait_for 30 "the node coming up idle" bash -c "sinfo -h -o %T | grep -q idle"

# The fleet: the real traces, named in a manifest.
mkdir -p "$work/fleet"
for snapshot in "$repo"/tests/data/real/traces/*.pickle.xz; do
  name=$(basename "$snapshot" .pickle.xz)
  "$memreplay" import "$snapshot" -o "$work/fleet/$name.mrt" >/dev/null
  printf '%s\t%s.mrt\n' "$name" "$name" >>"$work/fleet/manifest.tsv"
done

started=$(date +%s)
MEMREPLAY=$memreplay tools/slurm/submit.sh "$work/fleet/manifest.tsv" "$work/out" "$shards" "${flags[@]}"
wait_for 600 "the array and the summary job finishing" \
  bash -c "[ -z \"\$(squeue -h)\" ] && [ -s '$work/out/summary.json' ]"
echo "test_single_node: Slurm ran $shards shards and the summary in $(($(date +%s) - started)) s"

"$memreplay" sweep --manifest "$work/fleet/manifest.tsv" "${flags[@]}" -o "$work/local.jsonl" 2>/dev/null
"$memreplay" sweep-summary "$work/local.jsonl" --json "$work/local-summary.json" >/dev/null
/usr/bin/python3 - "$work" "$shards" <<'EOF' || fail "the Slurm sweep differs from the local one"
import glob, json, sys
work, shards = sys.argv[1], int(sys.argv[2])

def lines(paths):
    out = {}
    for path in paths:
        for text in open(path):
            line = json.loads(text)
            line.pop("replay_seconds")
            key = (line["name"], line["policy"], json.dumps(line["capacity"]))
            assert key not in out, f"{key} twice"
            out[key] = line
    return out

files = sorted(glob.glob(f"{work}/out/shard-*.jsonl"))
assert len(files) == shards, files
slurm, local = lines(files), lines([f"{work}/local.jsonl"])
assert slurm == local, f"{len(slurm)} tasks from Slurm, {len(local)} locally"
assert json.load(open(f"{work}/out/summary.json")) == json.load(open(f"{work}/local-summary.json"))
print(f"test_single_node: {len(slurm)} tasks in {shards} shards, each once, equal to the local sweep; "
      "the merged summary equals the local one")
EOF
head -5 "$work/out/summary.txt"
echo "test_single_node: PASS"
