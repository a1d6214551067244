#!/bin/bash
# The unpickler's three fuzz targets at once on the H200 host's 16 cores (6 + 7 + 3 jobs), SECS each,
# results in $OUT. The directory holds fuzz/bundle.sh's bundle of unpickle_fuzz, snapshot_import_fuzz
# and one_pass_dict_fuzz with this script copied in.
#   OUT=results SECS=380 BUNDLE/host_campaign_unpickler.sh
D=$(cd "$(dirname "$0")" && pwd)
S=${SECS:-360}
SEED_OFFSET=900 bash $D/parallel.sh $D $OUT/fuzz $S unpickle_fuzz 6 > $OUT/unpickle.txt 2>&1 &
SEED_OFFSET=900 bash $D/parallel.sh $D $OUT/fuzz $S snapshot_import_fuzz 7 > $OUT/snapshot.txt 2>&1 &
SEED_OFFSET=900 bash $D/parallel.sh $D $OUT/fuzz $S one_pass_dict_fuzz 3 > $OUT/onepass.txt 2>&1 &
wait
for f in $OUT/unpickle.txt $OUT/snapshot.txt $OUT/onepass.txt; do tail -n 5 "$f"; done
