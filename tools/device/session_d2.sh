#!/usr/bin/env bash
# Session 5, second device call: build; every GPU test; MRI 880 cold and warm (bench, warm-up 2,
# the trace of a warm run), 14,080 cold (write-out time, -v), torch.linalg.svd batched in the same
# call; the 32,000^2 mosaic (direct FITS reads, parallel finalize) on GPU and CPU with a trace,
# CPU vs GPU catalogs compared; fits_read_timing on the mosaic (CFITSIO vs direct reads).
# Run: bash .kcarry/run.sh bash tools/device/session_d2.sh (carry .devdeps, .kcarry)
set -uo pipefail
OUT=${OUT:-/tmp/out}; D=/tmp/d2; mkdir -p "$OUT" $D/logs
t0=$SECONDS; stamp() { echo "== $1 at $((SECONDS - t0)) s"; }
TARGETS="imflow_cli imflow_gpu_tests fits_read_timing" SETUP_LOGS=$D/logs . tools/device/setup.sh || exit 1
stamp built
timeout 240 build-dev/tests/gpu/imflow_gpu_tests > $D/logs/gpu_tests.log 2>&1; echo "gpu tests rc=$?"
grep -a -E "test cases|assertions|FAILED" $D/logs/gpu_tests.log | tail -6
stamp gpu-tests
imflow=build-dev/imflow; slices=datasets/data/mri/slices
mri_yaml() {  # NAME INPUT BATCH
  cat > $D/$1.yaml <<YAML
input: {dir: $2, patterns: ["*.png"], recursive: true}
output: {dir: /dev/shm/$1, formats: [png, metrics], png_compression: 1}
device: cuda
streams: 4
batch: $3
steps:
  - normalize: {method: minmax}
  - svd_reconstruct: {rank: 50, solver: gpu}
YAML
}
cold() {  # NAME INPUT BATCH
  mri_yaml "$@"; rm -rf /dev/shm/$1; sync
  local s e; s=$(date +%s%N)
  $imflow -v run $D/$1.yaml --summary $D/$1.summary.json > $D/logs/$1.log 2>&1; local rc=$?
  e=$(date +%s%N)
  /usr/bin/python3 - $D/$1.summary.json $rc $(( (e - s) / 1000000 )) $1 <<'PY' | tee -a $D/cold.jsonl
import json, sys
s = json.load(open(sys.argv[1])); t = s["totals"]
print(json.dumps({"name": sys.argv[4], "rc": int(sys.argv[2]), "items": t["items"], "failed": t.get("failed"),
  "run_wall_s": t["wall_seconds"], "process_s": int(sys.argv[3]) / 1000, "slices_per_s_run": t["items"] / t["wall_seconds"],
  "slices_per_s_process": t["items"] / (int(sys.argv[3]) / 1000), "gpu_setup_seconds": s.get("gpu_setup_seconds")}))
PY
  grep -E "written in|items:" $D/logs/$1.log | sed 's/^/    /'
}
cold cold880_b64 $slices 64; cold cold880_b64_again $slices 64
for b in 32 64; do
  mri_yaml warm880_b$b $slices $b
  $imflow -q bench $D/warm880_b$b.yaml --warmup 2 --repeat 7 --trace --out $D/bench_b$b > $D/logs/bench_b$b.log 2>&1; echo "bench b$b rc=$?"
  /usr/bin/python3 -c "import json; p=json.load(open('$D/bench_b$b/bench.json'))['points'][0]; print(' warm b$b', p['images_per_second'], p['wall_seconds'], p['stage_busy_seconds'])"
done
PYTHONUNBUFFERED=1 python3 tools/baselines/svd_baselines.py $slices --rank 50 --skip numpy,cupy --json $D/svd_baselines.json 2>&1 | tail -2
big=/tmp/x16; for r in $(seq 1 16); do mkdir -p $big/r$r; ln -f $slices/*.png $big/r$r/; done
cold cold14080_b128 $big 128; cold cold14080_b128_again $big 128
rm -rf $big /dev/shm/cold* /dev/shm/warm*
stamp mri
mkdir -p /tmp/m32/in; python3 datasets/make_mosaic.py /tmp/m32/in/mosaic.fits --size 32000x32000 --from datasets/data/astro > $D/logs/make_mosaic.log 2>&1
cat /tmp/m32/in/mosaic.fits > /dev/null; stamp mosaic-made
build-dev/tests/fits_read_timing /tmp/m32/in/mosaic.fits 4096 3 > $D/fits_read_timing.txt 2>&1; tail -8 $D/fits_read_timing.txt
for s in 8; do for bps in 2 4; do
  rm -rf /dev/shm/o; $imflow -q run config/astro.yaml --input /tmp/m32/in --output /dev/shm/o --device cuda --threads 16 --tile 4096 \
    --streams $s --buffers-per-stream $bps --summary $D/mosaic32k_gpu_s${s}_b$bps.json --trace $D/mosaic32k_gpu_s${s}_b$bps.trace.json
done; done
mv /dev/shm/o /dev/shm/o-gpu
rm -rf /dev/shm/o; $imflow -q run config/astro.yaml --input /tmp/m32/in --output /dev/shm/o --device cpu --threads 16 --tile 4096 \
  --summary $D/mosaic32k_cpu.json
/usr/bin/python3 tools/compare_tiled.py /dev/shm/o /dev/shm/o-gpu > $D/compare_cpu_gpu.txt 2>&1; tail -3 $D/compare_cpu_gpu.txt
for f in $D/mosaic32k_*.json; do /usr/bin/python3 -c "import json; s=json.load(open('$f')); t=s['totals']; i=s['items'][0]; print('$f'.split('/')[-1], round(t['wall_seconds'],3), round(t['megapixels']/t['wall_seconds'],1), 'Mpix/s', i.get('nsources'), 'prepass', round(i['tiles']['background_prepass_seconds'],3), {k: round(v,2) for k,v in i['seconds'].items()})"; done
gzip $D/*.trace.json
rm -rf /dev/shm/o /dev/shm/o-gpu
stamp mosaic
find $D -name '*.summary.json' -size +1M -delete
tar czf "$OUT/d2.tgz" -C /tmp d2
