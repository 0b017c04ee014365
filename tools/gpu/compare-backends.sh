#!/usr/bin/env bash
# Real files through both backends on a GPU host: $SWEEP/astro (FITS) through config/astro.yaml,
# config/astro-sextractor.yaml (mesh background, deblending) and config/astro-photometry.yaml
# (Kron, aperture, flux-radius and windowed photometry; its filter with `arithmetic: sep`, which
# both devices compute bit for bit, so that the same pixels reach the deblender), $SWEEP/mri (PNG, NIfTI-1/2,
# Analyze) through the MRI pipeline (rank 50, clipped; solver gpu on CUDA), each with --device
# cpu and --device cuda. Checks: the same items fail with the same messages; catalogs agree
# (tools/gpu/compare-catalogs.py: same sources, centroids within 1e-4 px, fluxes within 1e-5
# relative); MRI metrics agree (rank equal, relative error within 1e-3).
# SWEEP defaults to the fetched samples (datasets/fetch.sh: datasets/data/astro, and the MRI
# volumes and PNG slices); point it at any tree with astro/ and mri/ to try other instruments.
# Needs build-dev (tools/gpu/setup.sh). Logs and summaries under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ -z "${SWEEP:-}" ]; then
  SWEEP=/tmp/backends-sweep; rm -rf $SWEEP; mkdir -p $SWEEP/mri
  ln -s "$PWD/datasets/data/astro" $SWEEP/astro
  for f in datasets/data/mri/volumes/* datasets/data/mri/png/*; do [ -f "$f" ] && ln -s "$PWD/$f" $SWEEP/mri/; done
fi
imflow=$PWD/build-dev/imflow
mri_cpu=/tmp/sweep-mri-cpu.yaml mri_gpu=/tmp/sweep-mri-gpu.yaml
patterns='patterns: ["*.png", "*.nii", "*.nii.gz", "*.hdr", "*.hdr.gz"]'
sed -e "s/patterns: .*/$patterns/" -e 's/rank: 50,/rank: 50, clip_rank: true,/' config/mri.yaml > $mri_cpu
sed -e "s/patterns: .*/$patterns/" -e 's/svd_reconstruct: {rank: 50, .*/svd_reconstruct: {rank: 50, clip_rank: true, solver: gpu}/' \
  config/mri-gpu.yaml > $mri_gpu
sed 's/apply_to: detection}/apply_to: detection, arithmetic: sep}/' config/astro-photometry.yaml > /tmp/sweep-photometry.yaml
grep -q "arithmetic: sep" /tmp/sweep-photometry.yaml || { echo "compare-backends: config/astro-photometry.yaml's convolve not found"; exit 1; }
status=0
for set in astro deblend photometry mri; do
  for device in cpu cuda; do
    pipeline=config/astro.yaml input=$SWEEP/$set
    [ $set = deblend ] && pipeline=config/astro-sextractor.yaml input=$SWEEP/astro
    [ $set = photometry ] && pipeline=/tmp/sweep-photometry.yaml input=$SWEEP/astro
    if [ $set = mri ]; then pipeline=$mri_cpu; [ $device = cuda ] && pipeline=$mri_gpu; fi
    rm -rf /tmp/sweep-$set-$device
    $imflow run $pipeline --input "$input" --output /tmp/sweep-$set-$device --device $device --threads 8 \
      > "$OUT/${set}_$device.log" 2>&1
    echo "$set $device: exit $? ($(tail -1 "$OUT/${set}_$device.log" | grep -o '[0-9]* items: .* failed'))"
    cp /tmp/sweep-$set-$device/summary.json "$OUT/${set}_$device.summary.json"
    # Failures without timestamps, sorted: the two backends must fail the same items alike.
    grep ' error: ' "$OUT/${set}_$device.log" | sed -e 's/^\[[^]]*\] error: //' -e "s|/tmp/sweep-$set-$device|OUT|g" | sort \
      > "$OUT/${set}_$device.errors"
  done
  if cmp -s "$OUT/${set}_cpu.errors" "$OUT/${set}_cuda.errors"; then
    echo "$set: the same $(wc -l < "$OUT/${set}_cpu.errors") failures on both backends"
  else
    echo "$set: failures differ:"; diff "$OUT/${set}_cpu.errors" "$OUT/${set}_cuda.errors" | head -20; status=1
  fi
done
/usr/bin/python3 tools/gpu/compare-catalogs.py /tmp/sweep-astro-cpu /tmp/sweep-astro-cuda || status=1
/usr/bin/python3 tools/gpu/compare-catalogs.py /tmp/sweep-deblend-cpu /tmp/sweep-deblend-cuda || status=1
/usr/bin/python3 tools/gpu/compare-catalogs.py /tmp/sweep-photometry-cpu /tmp/sweep-photometry-cuda || status=1
/usr/bin/python3 - /tmp/sweep-mri-cpu/metrics.csv /tmp/sweep-mri-cuda/metrics.csv <<'EOF' || status=1
import csv, sys
rows = [{(r["file"], r["slice"]): r for r in csv.DictReader(open(p))} for p in sys.argv[1:]]
bad = [k for k in rows[0] if k not in rows[1] or rows[0][k]["rank"] != rows[1][k]["rank"]
       or abs(float(rows[0][k]["rel_frobenius_error"]) - float(rows[1][k]["rel_frobenius_error"])) > 1e-3]
print(f"mri metrics: {len(rows[0])} cpu / {len(rows[1])} cuda slices, {len(bad)} differ", bad[:5])
sys.exit(1 if bad or len(rows[0]) != len(rows[1]) else 0)
EOF
exit $status
