#!/usr/bin/env bash
# Session 6 device calls e2-e4 (e1 ran this script's first version, session_e1.sh at commit 59ad7d7, without the
# warm bench): build; every GPU test (with the GPU-resident image test); the
# 32,000^2 mosaic as a GPU-resident image (default), through tiles (tiling.resident: off) and on
# the CPU, each timed by the run and by the process, peak RSS (/usr/bin/time -v), a trace of a
# resident run; CPU vs GPU catalogs; the 16,500 x 16,300 real mosaic whole vs resident on the GPU.
# Run: [NAME=e3 QUICK=1] bash .kcarry/run.sh bash tools/device/session_e2.sh (carry .devdeps, .kcarry);
# QUICK: only the GPU tests and the resident runs and bench.
set -uo pipefail
OUT=${OUT:-/tmp/out}; NAME=${NAME:-e2}; D=/tmp/$NAME; mkdir -p "$OUT" $D/logs
t0=$SECONDS; stamp() { echo "== $1 at $((SECONDS - t0)) s"; }
TARGETS="imflow_cli imflow_gpu_tests" SETUP_LOGS=$D/logs . tools/device/setup.sh || exit 1
stamp built
timeout 300 build-dev/tests/gpu/imflow_gpu_tests > $D/logs/gpu_tests.log 2>&1; echo "gpu tests rc=$?"
grep -a -E "test cases|assertions|FAILED" $D/logs/gpu_tests.log | tail -6
stamp gpu-tests
imflow=$PWD/build-dev/imflow
mkdir -p /tmp/m32/in /tmp/m16/in
python3 datasets/make_mosaic.py /tmp/m32/in/mosaic.fits --size 32000x32000 --from datasets/data/astro > $D/logs/make_mosaic.log 2>&1
cat /tmp/m32/in/mosaic.fits > /dev/null; stamp mosaic-made
sed 's/^device: auto/device: auto\ntiling: {resident: off}/' config/astro.yaml > $D/astro-tiles.yaml
grep -q "resident: off" $D/astro-tiles.yaml || echo "astro-tiles.yaml: no resident: off"
run() {  # NAME CONFIG DEVICE [extra imflow options]
  local name=$1 cfg=$2 device=$3; shift 3
  rm -rf /dev/shm/o-$name; sync
  /usr/bin/time -v $imflow -q run $cfg --input /tmp/m32/in --output /dev/shm/o-$name --device $device --threads 16 \
    "$@" > $D/logs/$name.log 2>&1; local rc=$?; cp /dev/shm/o-$name/summary.json $D/$name.json
  /usr/bin/python3 - $D/$name.json $D/logs/$name.log $rc $name <<'PY' | tee -a $D/mosaic32k.jsonl
import json, re, sys
s = json.load(open(sys.argv[1])); t = s["totals"]; i = s["items"][0]; log = open(sys.argv[2]).read()
m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", log)
process = (int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))) if m else None
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", log).group(1)) / 1000
g = s.get("gpu", {}).get("devices", [{}])[0]
print(json.dumps({"name": sys.argv[4], "rc": int(sys.argv[3]), "status": i["status"], "sources": i.get("nsources"),
  "run_wall_s": round(t["wall_seconds"], 3), "mpix_per_s_run": round(t["megapixels"] / t["wall_seconds"], 1),
  "process_s": process, "mpix_per_s_process": round(t["megapixels"] / process, 1) if process else None,
  "peak_rss_mb": rss, "gpu_setup": s.get("gpu_setup_seconds"), "resident": i.get("gpu_resident"),
  "item_seconds": {k: round(v, 3) for k, v in i["seconds"].items()},
  "kernel_busy_s": g.get("kernel_busy_seconds"), "h2d_busy_s": g.get("h2d_busy_seconds")}))
PY
}
run gpu_resident_r1 config/astro.yaml cuda --trace $D/gpu_resident.trace.json
run gpu_resident_r2 config/astro.yaml cuda
run gpu_resident_r3 config/astro.yaml cuda
run gpu_resident_s8 config/astro.yaml cuda --streams 8
if [ -z "${QUICK:-}" ]; then
run gpu_tiles $D/astro-tiles.yaml cuda --streams 8
run cpu_tiles config/astro.yaml cpu
/usr/bin/python3 tools/compare_tiled.py /dev/shm/o-cpu_tiles /dev/shm/o-gpu_resident_r1 > $D/compare_cpu_resident.txt 2>&1; echo "cpu vs resident rc=$?"; tail -2 $D/compare_cpu_resident.txt
/usr/bin/python3 tools/compare_tiled.py /dev/shm/o-gpu_tiles /dev/shm/o-gpu_resident_r1 > $D/compare_tiles_resident.txt 2>&1; echo "gpu tiles vs resident rc=$?"; tail -2 $D/compare_tiles_resident.txt
fi
rm -rf /dev/shm/o-*
stamp mosaic32k
# Warm: the same image in one process (CUDA context, pinned staging cache and page cache warm).
printf 'input: {dir: /tmp/m32/in, patterns: ["*.fits"]}\noutput: {dir: /dev/shm/ob, formats: [csv, fits]}\ndevice: cuda\nthreads: 16\nsteps:\n  - background: {kappa: 3, max_iters: 100}\n  - segment: {nsigma: 5, relative_to: background}\n  - label: {connectivity: 4}\n  - measure\n' > $D/bench32k.yaml
$imflow -q bench $D/bench32k.yaml --warmup 1 --repeat 5 --trace --out $D/bench32k > $D/logs/bench32k.log 2>&1; echo "bench rc=$?"
/usr/bin/python3 -c "import json; p=json.load(open('$D/bench32k/bench.json'))['points'][0]; print('warm', json.dumps({k: p[k] for k in p if k in ('wall_seconds','images_per_second','megabytes_per_second','stage_busy_seconds')}))"
rm -rf /dev/shm/ob
[ -n "${QUICK:-}" ] && { stamp done; gzip $D/*.trace.json; tar czf "$OUT/$NAME.tgz" -C /tmp $NAME; exit 0; }
python3 datasets/make_mosaic.py /tmp/m16/in/mosaic.fits --from datasets/data/astro > $D/logs/make_mosaic16.log 2>&1
for mode in whole resident; do
  tile=4096; [ $mode = whole ] && tile=0
  $imflow -q run config/astro.yaml --input /tmp/m16/in --output /dev/shm/m16-$mode --device cuda --threads 16 --tile $tile \
    > $D/logs/m16_$mode.log 2>&1; echo "m16 $mode rc=$?"; cp /dev/shm/m16-$mode/summary.json $D/mosaic16k_gpu_$mode.json
done
/usr/bin/python3 tools/compare_tiled.py /dev/shm/m16-whole /dev/shm/m16-resident > $D/compare_m16_whole_resident.txt 2>&1
echo "m16 whole vs resident rc=$?"; tail -2 $D/compare_m16_whole_resident.txt
stamp done
gzip $D/*.trace.json
tar czf "$OUT/$NAME.tgz" -C /tmp $NAME
