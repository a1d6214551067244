#!/usr/bin/env bash
# The tail of `memreplay import F`: what comes after the reading, from strace timestamps (strace
# slows every syscall a little, the same for both builds). Per round and build, in ms from exec:
#   decoder   the decoder thread's exit (compressed input only: the last byte decoded);
#   header    the header record's write (the reading and the state passes are done: nothing is
#             written before them);
#   renamed   the rename onto the output (the file is whole);
# and tail = renamed - header, the output stage's own time. BUILDS alternate, ROUNDS rounds.
#   tools/bench/import_tail.sh FILE ROUNDS MEMREPLAY...   (needs strace)
set -euo pipefail
file=$1 rounds=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((i = 1; i <= rounds; i++)); do
  for bin in "$@"; do
    strace -f -ttt -e trace=write,rename,exit,execve -o "$out/st" "$bin" import "$file" -o "$out/t.mrt" >/dev/null
    # The decoder is the first thread to exit (the writer's and the encoders' exit after the header).
    awk -v name="$bin" -v round="$i" '
      $3 ~ /^execve/ && !start { start = $2 }
      $3 ~ /^exit\(/ && !decoder && !header { decoder = $2 }
      $3 ~ /^write\(/ && $4 ~ /^"MRTRACE/ { header = $2 }
      $3 ~ /^rename\(/ { renamed = $2 }
      END {
        d = decoder ? sprintf("%.1f", (decoder - start) * 1000) : "-"
        printf "round %d %-40s decoder %6s  header %6.1f  renamed %6.1f  tail %5.1f ms\n", round, name, d,
               (header - start) * 1000, (renamed - start) * 1000, (renamed - header) * 1000
      }' "$out/st"
  done
done
