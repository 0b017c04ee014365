#!/usr/bin/env bash
# Device call (session 4): issue 11's GPU ratio in steady state. SEP (one core) and imflow's GPU
# path on the same 4096^2 fields in the same call: SEP's seconds per image (median of 3 calls per
# field), then `imflow run` over 480 hard links of the two fields (30 GiB from the page cache) at
# several streams x buffers, so that the one-time pinned-pool allocation (~36 ms per 64 MiB buffer,
# serialised by the driver: tools/device/session_c4.sh traces) is amortised as in a real directory.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/c5
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
PEERS_NO_DEPS=1 bash tools/peers/install.sh --from .kcarry/peers /opt/peers > /tmp/c5/install.log 2>&1 || { tail /tmp/c5/install.log; exit 1; }
. /opt/peers/env.sh
TARGETS=imflow_cli SETUP_LOGS=/tmp/c5 . tools/device/setup.sh || exit 1
f=/tmp/c5/fields; mkdir -p $f/src
python3 tools/peers/make_starfield.py --out $f/src --size 4096 --psf gauss --psf moffat > /dev/null
python3 tools/peers/sep_run.py --images $f/src --out /tmp/c5/sep --repeat 3 > /tmp/c5/sep.log 2>&1 || { tail /tmp/c5/sep.log; exit 1; }
python3 -c "import json,statistics;t=json.load(open('/tmp/c5/sep/timing.json'));print('SEP', t['version'], 'seconds per image (median):', statistics.median(i['seconds'] for i in t['images']))"
for i in $(seq 0 239); do ln -f $f/src/star_4096_gauss.fits $f/g$i.fits; ln -f $f/src/star_4096_moffat.fits $f/m$i.fits; done
cat $f/src/*.fits > /dev/null
point() {  # NAME ARGS...
  local name=$1; shift
  build-dev/imflow -q run config/peers-mesh.yaml --input $f --output /tmp/c5/out-$name --device cuda "$@" > /tmp/c5/log-$name.txt 2>&1
  echo "$name rc=$? $(python3 -c "import json;s=json.load(open('/tmp/c5/out-$name/summary.json'));t=s['totals'];print(t['items'],'items',round(t['wall_seconds'],3),'s',round(t['images_per_second'],1),'img/s', 'setup', s.get('gpu_setup_seconds'), {k:round(v,2) for k,v in t['stage_busy_seconds'].items()})")"
  cp /tmp/c5/out-$name/summary.json /tmp/c5/summary-$name.json; rm -rf /tmp/c5/out-$name
}
point s4b2 --streams 4 --buffers-per-stream 2
point s4b4 --streams 4 --buffers-per-stream 4
point s4b8 --streams 4 --buffers-per-stream 8
point s8b4 --streams 8 --buffers-per-stream 4
point s4b4_again --streams 4 --buffers-per-stream 4 --trace /tmp/c5/trace-s4b4.json
rm -rf $f; gzip /tmp/c5/trace-s4b4.json
tar czf "$OUT/c5.tgz" -C /tmp c5
