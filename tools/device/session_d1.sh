#!/usr/bin/env bash
# Session 5, first device call (issue 5 and 10): build; pinned-allocator GPU tests; one-time
# costs (first_calls.sh); MRI 880 real slices cold (`imflow run`, a fresh process each, -v) and
# warm (`imflow bench --warmup 1 --repeat 5` in one process, as the Python baselines time a warm
# GPU), batch 64/128/256 x 4 streams, with torch.linalg.svd batched in the same call; the
# 14,080-slice directory cold; the 32,000^2 mosaic on the GPU (traced) and the CPU.
# Run: bash .kcarry/run.sh bash tools/device/session_d1.sh (carry .devdeps, .kcarry, datasets/data/mri)
set -uo pipefail
OUT=${OUT:-/tmp/out}; D=/tmp/d1; mkdir -p "$OUT" $D/logs
t0=$SECONDS; stamp() { echo "== $1 at $((SECONDS - t0)) s"; }
TARGETS="imflow_cli imflow_gpu_tests" SETUP_LOGS=$D/logs . tools/device/setup.sh || exit 1
stamp built
timeout 60 build-dev/tests/gpu/imflow_gpu_tests "[pinned]" > $D/logs/gpu_pinned.log 2>&1; echo "pinned tests rc=$?"; tail -2 $D/logs/gpu_pinned.log
bash tools/device/first_calls.sh > $D/first_calls.jsonl 2>&1; tail -3 $D/first_calls.jsonl
imflow=build-dev/imflow; slices=datasets/data/mri/slices; echo "slices: $(ls $slices | wc -l)"
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
  grep -E "listed|written in|items:" $D/logs/$1.log | sed 's/^/    /'
}
for b in 64 128; do cold cold880_b$b $slices $b; done
cold cold880_b64_again $slices 64
stamp cold
for b in 64 128 256; do
  mri_yaml warm880_b$b $slices $b
  $imflow -q bench $D/warm880_b$b.yaml --warmup 1 --repeat 5 --out $D/bench_b$b > $D/logs/bench_b$b.log 2>&1; echo "bench b$b rc=$?"
  /usr/bin/python3 -c "import json,sys; p=json.load(open('$D/bench_b$b/bench.json'))['points'][0]; print(' warm b$b', {k: p[k] for k in p if k in ('wall_seconds','images_per_second','repeats','items')})"
done
$imflow -q bench $D/warm880_b128.yaml --warmup 1 --repeat 1 --trace --out $D/bench_b128_traced > $D/logs/bench_traced.log 2>&1
stamp warm
PYTHONUNBUFFERED=1 python3 tools/baselines/svd_baselines.py $slices --rank 50 --skip numpy,cupy --json $D/svd_baselines.json 2>&1 | tail -3
stamp baselines
big=/tmp/x16; for r in $(seq 1 16); do mkdir -p $big/r$r; ln -f $slices/*.png $big/r$r/; done
cold cold14080_b128 $big 128
rm -rf $big /dev/shm/cold* /dev/shm/warm*
stamp x16
if [ -d datasets/data/astro ]; then
  mkdir -p /tmp/m32/in; python3 datasets/make_mosaic.py /tmp/m32/in/mosaic.fits --size 32000x32000 --from datasets/data/astro > $D/logs/make_mosaic.log 2>&1
  cat /tmp/m32/in/mosaic.fits > /dev/null; stamp mosaic-made
  $imflow -q run config/astro.yaml --input /tmp/m32/in --output /dev/shm/o --device cuda --threads 16 --tile 4096 --streams 8 \
    --summary $D/mosaic32k_gpu_s8.json --trace $D/mosaic32k_gpu_s8.trace.json; rm -rf /dev/shm/o
  $imflow -q run config/astro.yaml --input /tmp/m32/in --output /dev/shm/o --device cpu --threads 16 --tile 4096 \
    --summary $D/mosaic32k_cpu.json; rm -rf /dev/shm/o
  for f in $D/mosaic32k_*.json; do /usr/bin/python3 -c "import json; s=json.load(open('$f')); t=s['totals']; i=s['items'][0]; print('$f'.split('/')[-1], round(t['wall_seconds'],3), round(t['megapixels']/t['wall_seconds'],1), 'Mpix/s', i.get('nsources'), {k: round(v,2) for k,v in i['seconds'].items()})"; done
  gzip $D/mosaic32k_gpu_s8.trace.json
  stamp mosaic
fi
find $D -name '*.summary.json' -size +1M -delete
tar czf "$OUT/d1.tgz" -C /tmp d1
