#!/usr/bin/env bash
# Submits a fleet sweep to Slurm: an array of SHARDS tasks (sweep.sbatch, one shard each) and the
# sweep-summary job after it (summary.sbatch; afterany, so a shard with error lines still gets
# its summary). Prints the two job ids. Extra sbatch options (partition, time, CPUs per shard)
# come from SBATCH_* variables or SWEEP_SBATCH_ARGS.
#   tools/slurm/submit.sh fleet.tsv out/ 64 --policy all --capacity fit
set -euo pipefail
if (($# < 3)); then
  echo "usage: $0 MANIFEST OUT_DIR SHARDS [memreplay sweep flags...]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
manifest=$(realpath "$1") out=$(realpath -m "$2") shards=$3
shift 3
mkdir -p "$out"
read -r -a extra <<<"${SWEEP_SBATCH_ARGS:-}"
array=$(sbatch --parsable "${extra[@]}" --array="0-$((shards - 1))" --chdir="$out" "$here/sweep.sbatch" \
  "$manifest" "$out" "$@")
array=${array%%;*}
summary=$(sbatch --parsable "${extra[@]}" --dependency="afterany:$array" --chdir="$out" "$here/summary.sbatch" "$out")
echo "array job $array ($shards shards), summary job ${summary%%;*}; results in $out"
