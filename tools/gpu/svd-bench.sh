#!/usr/bin/env bash
# tools/gpu/svd-bench.sh BUILD OUTDIR [SLICES]: the MRI SVD measurements on a GPU host
# (docs/mri.md, docs/performance.md): the GPU tests of the MRI path, imflow_svd_bench
# (reconstruction kernels + block-size sweep, solvers, hybrid), the Python baselines
# (tools/baselines/svd_baselines.py: numpy loop, torch batched, CuPy) and end-to-end runs of
# `imflow run` from the PNG directory to written PNGs (GPU per slice and in batches of
# 1/16/64/256, solver auto, hybrid, CPU; with and without PNG output; PNG zlib levels), everything
# as JSON/logs under OUTDIR. SKIP=tests,bench,e2e,baselines leaves parts out; TESTS= picks tests;
# ONLY=REGEX picks end-to-end runs by name.
set -uo pipefail
build="${1:?build dir}"; out="${2:?output dir}"; slices="${3:-datasets/data/mri/slices}"
mkdir -p "$out"
log="$out/bench_svd.log"
exec > >(tee -a "$log") 2>&1
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null) cores $(nproc)"
tmp=""
skip="${SKIP:-}"  # comma-separated: tests,bench,e2e,baselines
if [[ ",$skip," != *,tests,* ]]; then
echo "== GPU tests (all; the MRI ones are tagged [mri])"
"$build/tests/gpu/imflow_gpu_tests" ${TESTS:-} 2>&1 | tail -120
fi
if [[ ",$skip," != *,bench,* ]]; then
echo "== imflow_svd_bench"
"$build/tests/gpu/imflow_svd_bench" --slices "$slices" --json "$out/svd_bench.json" --threads "$(nproc)"
fi
if [[ ",$skip," != *,e2e,* ]]; then
echo "== end to end (imflow run, $(ls "$slices" | wc -l) slices)"
tmp="$(mktemp -d)"
e2e="$out/e2e.json"; echo "[" > "$e2e"; first=1
run() {  # NAME DEVICE STEP FORMATS [extra args]; ONLY=REGEX runs only the matching names
  local name="$1" device="$2" step="$3" formats="$4"; shift 4
  [[ -n "${ONLY:-}" && ! "$name" =~ $ONLY ]] && return 0
  cat > "$tmp/$name.yaml" <<YAML
input: {dir: $slices, patterns: ["*.png"], recursive: true}
output: {dir: $tmp/$name, formats: [$formats], png_compression: ${PNG_LEVEL:-1}}
device: $device
steps:
  - normalize: {method: minmax}
  - svd_reconstruct: $step
YAML
  local t0=$(date +%s%N)
  "$build/imflow" -q run "$tmp/$name.yaml" "$@" > "$tmp/$name.log" 2>&1
  local rc=$? t1=$(date +%s%N)
  python3 - "$tmp/$name/summary.json" "$name" "$rc" "$(( (t1 - t0) / 1000000 ))e-3" "$*" >> "$e2e" <<'PY'
import json, sys
path, name, rc, wall_process, args = sys.argv[1:6]
try:
    s = json.load(open(path))
except Exception as e:
    print(json.dumps({"name": name, "rc": int(rc), "error": repr(e)}) + ","); sys.exit()
t = s.get("totals", {})
res = {"name": name, "rc": int(rc), "args": args, "items": t.get("items"), "succeeded": t.get("succeeded"),
       "failed": t.get("failed"), "wall_seconds": t.get("wall_seconds"), "process_seconds": float(wall_process),
       "slices_per_s": t.get("images_per_second"), "stage_busy_seconds": t.get("stage_busy_seconds"),
       "gpu": s.get("gpu"), "gpu_batch": s.get("gpu_batch"), "device_choices": s.get("device_choices"),
       "gpu_setup_seconds": s.get("gpu_setup_seconds")}
print(json.dumps(res) + ",")
PY
  echo "  $name: rc $rc $(tail -1 "$e2e" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read().rstrip().rstrip(",")); print(d.get("wall_seconds"), "s,", d.get("slices_per_s"), "slices/s")')"
}
gpu_step="{rank: 50, solver: gpu, reconstruct: gpu}"
batched_step="{rank: 50, solver: gpu}"  # svd_solver auto: gesvda (+ Jacobi fallback) in batches
for b in 1 16 64 128 256; do
run gpu_batch${b}_png cuda "$batched_step" "png, metrics" --streams 4 --batch "$b"
done
run gpu_batch64_png_rep2 cuda "$batched_step" "png, metrics" --streams 4 --batch 64
run gpu_batch64_png_rep3 cuda "$batched_step" "png, metrics" --streams 4 --batch 64
run gpu_batch64_jacobi_png cuda "{rank: 50, solver: gpu, svd_solver: jacobi}" "png, metrics" --streams 4 --batch 64
run gpu_batch128_s2_png cuda "$batched_step" "png, metrics" --streams 2 --batch 128
run gpu_batch64_png_traced cuda "$batched_step" "png, metrics" --streams 4 --batch 64 --trace "$out/e2e_batch64_trace.json"
run gpu_batch64_metrics_only cuda "$batched_step" "metrics" --streams 4 --batch 64
run gpu_batch256_metrics_only cuda "$batched_step" "metrics" --streams 4 --batch 256
run gpu_batch64_gesvda_png cuda "{rank: 50, solver: gpu, svd_solver: gesvda}" "png, metrics" --streams 4 --batch 64
run gpu_batch256_gesvda_png cuda "{rank: 50, solver: gpu, svd_solver: gesvda}" "png, metrics" --streams 4 --batch 256
run gpu_batch256_streams8_png cuda "$batched_step" "png, metrics" --streams 8 --batch 256
PNG_LEVEL=0 run gpu_batch256_png0 cuda "$batched_step" "png, metrics" --streams 4 --batch 256
PNG_LEVEL=6 run gpu_batch256_png6 cuda "$batched_step" "png, metrics" --streams 4 --batch 256
run auto_png cuda "{rank: 50}" "png, metrics" --streams 4
# Steady state: the same slices 8 times (hard links, 7,040 items), so the fixed start-up costs
# (CUDA context, cuSOLVER handles, pinned pools: ~0.2 s) weigh 8x less than in a 0.4 s run.
big="$tmp/slices_x8"; for r in 1 2 3 4 5 6 7 8; do mkdir -p "$big/r$r"; ln -f "$slices"/*.png "$big/r$r/"; done
slices_saved="$slices"; slices="$big"
for b in 64 256; do
  run x8_gpu_batch${b}_png cuda "$batched_step" "png, metrics" --streams 4 --batch "$b"
done
run x8_gpu_batch64_s8_png cuda "$batched_step" "png, metrics" --streams 8 --batch 64
run x8_gpu_batch128_png cuda "$batched_step" "png, metrics" --streams 4 --batch 128
run x8_cpu_png cpu "{rank: 50, solver: cpu, reconstruct: cpu}" "png, metrics"
# 16 times (14,080 items).
for r in $(seq 9 16); do mkdir -p "$big/r$r"; ln -f "$slices_saved"/*.png "$big/r$r/"; done
run x16_gpu_batch64_png cuda "$batched_step" "png, metrics" --streams 4 --batch 64
run x16_gpu_batch64_s8_png cuda "$batched_step" "png, metrics" --streams 8 --batch 64
run x16_gpu_batch128_png cuda "$batched_step" "png, metrics" --streams 4 --batch 128
run x16_gpu_batch64_jacobi_png cuda "{rank: 50, solver: gpu, svd_solver: jacobi}" "png, metrics" --streams 4 --batch 64
slices="$slices_saved"
run hybrid_metrics_only cuda "{rank: 50, solver: cpu, reconstruct: gpu}" "metrics" --streams 8
run gpu_png_per_slice cuda "{rank: 50, solver: gpu, svd_solver: gesvdj}" "png, metrics" --streams 8 --batch 1
run hybrid_png cuda "{rank: 50, solver: cpu, reconstruct: gpu}" "png, metrics" --streams 8
run cpu_png cpu "{rank: 50, solver: cpu, reconstruct: cpu}" "png, metrics"
run cpu_metrics_only cpu "{rank: 50, solver: cpu, reconstruct: cpu}" "metrics"
echo "{}]" >> "$e2e"
cp "$tmp/gpu_batch64_png.log" "$out/e2e_gpu.log" 2>/dev/null
cp "$tmp/auto_png.log" "$out/e2e_auto.log" 2>/dev/null
fi
if [[ ",$skip," != *,baselines,* ]]; then
echo "== baselines (python)"
PYTHONUNBUFFERED=1 python3 tools/baselines/svd_baselines.py "$slices" --rank 50 --json "$out/svd_baselines.json"
fi
[[ -n "$tmp" ]] && rm -rf "$tmp"
echo "== done $(date -u +%FT%TZ)"
