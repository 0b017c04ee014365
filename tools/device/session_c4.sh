#!/usr/bin/env bash
# Device call (session 4): why 4096^2 streaming stays near 100 images/s when reads scale to 17 GB/s
# and pinned H2D runs at 54 GB/s in isolation (tools/device/read_scaling.cu, h2d_bandwidth.cu):
# `imflow run --trace` on 48 synthetic 4096^2 fields (config/peers-mesh.yaml) at a few
# streams x buffers x threads points; traces and summaries to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/c4
TARGETS=imflow_cli SETUP_LOGS=/tmp/c4 . tools/device/setup.sh || exit 1
f=/tmp/c4/fields; mkdir -p $f/src
python3 tools/peers/make_starfield.py --out $f/src --size 4096 --psf gauss --psf moffat > /dev/null
for i in $(seq 0 23); do ln -f $f/src/star_4096_gauss.fits $f/g$i.fits; ln -f $f/src/star_4096_moffat.fits $f/m$i.fits; done
cat $f/*.fits > /dev/null
point() {  # NAME ARGS...
  local name=$1; shift
  build-dev/imflow -q run config/peers-mesh.yaml --input $f --output /tmp/c4/out-$name --device cuda "$@" \
    --trace /tmp/c4/trace-$name.json > /tmp/c4/log-$name.txt 2>&1
  echo "$name rc=$? $(python3 -c "import json;t=json.load(open('/tmp/c4/out-$name/summary.json'))['totals'];print(round(t['images_per_second'],1),'img/s', {k:round(v,2) for k,v in t['stage_busy_seconds'].items()})")"
  cp /tmp/c4/out-$name/summary.json /tmp/c4/summary-$name.json; rm -rf /tmp/c4/out-$name
}
point s4b2 --streams 4 --buffers-per-stream 2
point s4b2_again --streams 4 --buffers-per-stream 2
point s4b4 --streams 4 --buffers-per-stream 4
point s8b2 --streams 8 --buffers-per-stream 2
point s4b4_t8 --streams 4 --buffers-per-stream 4 --threads 8
point s2b4 --streams 2 --buffers-per-stream 4
rm -rf $f
tar czf "$OUT/c4.tgz" -C /tmp c4
