#!/usr/bin/env bash
# .nii.gz reading before/after the whole-volume cache (session 9), on one machine instance: the
# committed tree (build-dev) against an older commit carried as OLD_TGZ (built into /tmp/old),
# on the all-GPU batched MRI pipeline over COPIES hard-linked copies of the carried volumes
# (datasets/data/mri/volumes: Colin27 ch2/ch2bet, 181 axial slices each; ITK KmeansTest, 62),
# REPEATS alternating runs, outputs in /dev/shm. Summaries, process seconds and a check that both
# builds wrote the same PNGs under $OUT. Run: bash .xcarry/run.sh bash tools/device/nifti_before_after.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. tools/device/setup.sh || exit 1
rm -rf /tmp/old && mkdir -p /tmp/old && tar xzf "${OLD_TGZ:-.xcarry/old.tgz}" -C /tmp/old && cp -r .devdeps /tmp/old/
(cd /tmp/old && TARGETS=imflow_cli SETUP_LOGS=/tmp . tools/device/setup.sh) || exit 1
rm -rf /tmp/nii; for c in $(seq 1 "${COPIES:-32}"); do mkdir -p /tmp/nii/c$c; ln -f datasets/data/mri/volumes/*.nii.gz /tmp/nii/c$c/; done
echo "NIfTI inputs: $(find /tmp/nii -name '*.nii.gz' | wc -l) volumes" | tee "$OUT/inputs.txt"
pipeline=/tmp/mri-nifti.yaml
sed -e 's/solver: auto, reconstruct: auto, svd_solver: auto, reconstruct_kernel: auto/solver: gpu/' \
    -e 's/patterns: \["\*.png"\]/patterns: ["*.nii.gz"]\n  recursive: true/' config/mri-gpu.yaml > $pipeline
for r in $(seq 1 "${REPEATS:-2}"); do
  for build in old new; do
    imflow=$PWD/build-dev/imflow; [ $build = old ] && imflow=/tmp/old/build-dev/imflow
    rm -rf /dev/shm/o_$build; sync
    start=$EPOCHREALTIME
    $imflow -q run $pipeline --input /tmp/nii --output /dev/shm/o_$build --device cuda --threads ${THREADS:-16} \
      --summary "$OUT/nifti_${build}_r$r.json"
    echo "nifti_${build}_r$r rc $? process seconds $(awk "BEGIN{print $EPOCHREALTIME - $start}")" | tee -a "$OUT/process_seconds.txt"
  done
done
# Same PNGs from both builds.
(cd /dev/shm/o_old && find . -name '*.png' -print0 | sort -z | xargs -0 sha256sum) > /tmp/old.sums
(cd /dev/shm/o_new && find . -name '*.png' -print0 | sort -z | xargs -0 sha256sum) > /tmp/new.sums
echo "PNGs: $(wc -l < /tmp/new.sums) new, $(wc -l < /tmp/old.sums) old, identical: $(cmp -s /tmp/old.sums /tmp/new.sums && echo yes || echo no)" | tee "$OUT/compare.txt"
/usr/bin/python3 tools/device/summary_table.py "$OUT" | tee "$OUT/table.txt"
