#!/usr/bin/env bash
# Every figure in docs/performance.md, measured with `imflow bench` (3 timed repeats after a
# warm-up; median, min and max per point) on this machine, into bench/results/<kind>/:
#   astro-2048   512 float32 2048x2048 FITS images made from the real ISAAC frame, config/astro.yaml:
#                GPU at the default streams/buffers and at streams 4 x 8 buffers (with the input
#                ceiling: the inputs read and copied to the GPU with no steps), FITS catalogs
#                only, a 41x41 Moffat matched filter; CPU with 1, 4 and all threads
#   mosaic-32k   one 32,000 x 32,000 float32 mosaic of real cells (datasets/make_mosaic.py):
#                GPU-resident, GPU tiles, CPU tiles
#   mri          the 880 real MRI slices (datasets/fetch_mri.sh) cycled to 14,080 (GPU) and 1,760
#                (CPU): config/mri-gpu.yaml (with the input ceiling), the all-GPU batched form,
#                config/mri.yaml on the CPU
#   peers        SEP 1.4.1 and SExtractor against imflow on the same 4096x4096 fields
#                (tools/peers/device.sh; needs the carried peers, see tools/gpu/README.md)
#   deblend      config/astro-sextractor.yaml (SExtractor's defaults, deblending and CLEAN) on 8
#                crowded 4096x4096 fields (tools/crowded_fields.py, DEBLEND_DENSITY stars per pixel,
#                0.004; 2048 on a CPU host): GPU, CPU with 1 and all threads, and SEP 1.4.1 with
#                the same settings on 3 of them when the Python has it
#   photometry   the same detection with config/astro-photometry.yaml's measure (auto 2.5/3.5,
#                apertures 3, 5, 10, flux_radius 0.5, windowed), mask_neighbours off (SEP's
#                recipes read the neighbours' pixels: the same numbers), on the same fields and
#                points; SEP's extraction and its documented recipes, timed apart
# Then tools/bench-report.py writes suite.json and suite.md (the tables docs/performance.md shows).
#
# usage: tools/bench-suite.sh [--kind NAME] [--imflow BIN] [--out DIR] [--scratch DIR]
#                             [--parts "astro-2048 mosaic-32k mri deblend photometry peers"]
# kind: the results folder (default: h100, h200, h200x2, ... from nvidia-smi; cpu-<N>core without
# a GPU); --out another (e.g. --parts photometry --out bench/results/h100/photometry). On a host
# without a GPU the CPU points of each part run (with fewer images).
# Inputs: datasets/data/astro and datasets/data/mri/slices (datasets/fetch.sh); scratch (default
# /dev/shm) holds the made inputs and the outputs, so reads come from the page cache and writes
# from memory: the figures are the engine's, not the disk's. machine.json names the commit measured
# (`git describe --dirty`; IMFLOW_COMMIT=... overrides it where the tree was copied without its git).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="" parts="astro-2048 mosaic-32k mri deblend photometry" imflow=build/imflow out="" scratch=/dev/shm/imflow-suite
while [ $# -gt 0 ]; do
  case $1 in
    --kind) kind=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    --imflow) imflow=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-suite.sh: unknown argument $1 (see --help)" >&2; exit 1 ;;
  esac
done
gpus=0
command -v nvidia-smi >/dev/null && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ -z "$kind" ]; then
  if [ "$gpus" -gt 0 ]; then
    model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oiE 'H100|H200|A100|L40S|L4|V100' | tr 'A-Z' 'a-z' || echo gpu)
    kind=${model:-gpu}; [ "$gpus" -gt 1 ] && kind=${kind}x$gpus
  else
    kind=cpu-$(nproc)core
  fi
fi
out=${out:-bench/results/$kind}
mkdir -p "$out" "$scratch"
[ -x "$imflow" ] || { echo "bench-suite.sh: no imflow binary at $imflow (tools/build.sh, or --imflow)" >&2; exit 1; }
cores=$(nproc)
py=""  # a Python with NumPy (the inputs are made with it): PATH's, else Debian's
for candidate in python3 /usr/bin/python3; do
  if command -v $candidate >/dev/null && $candidate -c "import numpy" 2>/dev/null; then py=$candidate; break; fi
done
[ -n "$py" ] || { echo "bench-suite.sh: no python3 with NumPy (pip install numpy, or apt-get install python3-numpy)" >&2; exit 1; }
log() { echo "== bench-suite: $* ($(date -u +%H:%M:%S))"; }
machine_json() {  # machine.json: this machine, and per part the commit that measured it
  $py - "$out/machine.json" "$kind" "$gpus" "$("$imflow" --version 2>&1 | head -1)" "${IMFLOW_COMMIT:-$(git describe --always --dirty 2>/dev/null || echo unknown)}" "$parts" <<'PY'
import json, os, platform, subprocess, sys
path, kind, gpus, version, commit, parts = sys.argv[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
names = []
if int(gpus):
    names = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                           capture_output=True, text=True).stdout.strip().splitlines()
old = json.load(open(path)) if os.path.exists(path) else {}
commits = old.get("commits", {part: old["commit"] for part in ("astro-2048", "mosaic-32k", "mri", "peers") if "commit" in old})
commits.update({part: commit for part in parts.split()})
json.dump({"kind": kind, "cpu": cpu, "cores": os.cpu_count(), "gpus": names, "kernel": platform.release(),
           "imflow": version, "commit": commit, "commits": commits}, open(path, "w"), indent=1)
PY
}

# bench NAME PIPELINE INPUT [imflow bench options...]: one `imflow bench`, bench.json kept as NAME.json.
bench() {
  local name=$1 pipeline=$2 input=$3; shift 3
  log "$name"
  rm -rf "$scratch/bench"
  "$imflow" -q bench "$pipeline" --input "$input" --out "$scratch/bench" --repeat "${REPEAT:-3}" --warmup 1 "$@" \
    > "$scratch/bench.log" 2>&1 || { tail -20 "$scratch/bench.log"; echo "bench-suite.sh: $name failed" >&2; return 1; }
  cp "$scratch/bench/bench.json" "$out/$name.json"
}

# A pipeline file derived from PIPELINE by sed expressions: variant OUT PIPELINE SED...
variant() {
  local target=$1 source=$2; shift 2
  local args=(); for e in "$@"; do args+=(-e "$e"); done
  sed "${args[@]}" "$source" > "$target"
}

astro_inputs() {
  local isaac; isaac=$(ls datasets/data/astro/ISAAC*.fits 2>/dev/null | head -1)
  [ -n "$isaac" ] || { echo "bench-suite.sh: datasets/data/astro/ISAAC*.fits missing (datasets/fetch.sh)" >&2; exit 1; }
  if [ ! -f "$scratch/a2048/.complete" ]; then
    rm -rf "$scratch/a2048"
    $py tools/gpu/make-astro-2048.py "$isaac" "$scratch/a2048" || return 1
    touch "$scratch/a2048/.complete"
  fi
  cat "$scratch"/a2048/c0/*.fits > /dev/null
}

moffat_pipeline() {  # config/astro.yaml with a 41x41 Moffat (FWHM 6 px, beta 2.5) matched filter
  $py - "$1" <<'PY'
import math, sys
size, fwhm, beta = 41, 6.0, 2.5
alpha = fwhm / (2 * math.sqrt(2 ** (1 / beta) - 1))
c = size // 2
rows = [[(1 + ((x - c) ** 2 + (y - c) ** 2) / alpha ** 2) ** -beta for x in range(size)] for y in range(size)]
total = sum(map(sum, rows))
kernel = "[" + ", ".join("[" + ", ".join(f"{v / total:.6e}" for v in r) + "]" for r in rows) + "]"
text = open("config/astro.yaml").read().replace("steps:\n", "steps:\n  - convolve: {apply_to: detection, kernel: " + kernel + "}\n", 1)
open(sys.argv[1], "w").write(text)
PY
}

part_astro() {
  astro_inputs || return 1
  local in=$scratch/a2048
  variant "$scratch/astro-fits.yaml" config/astro.yaml 's/formats: \[csv, fits\]/formats: [fits]/'
  moffat_pipeline "$scratch/astro-moffat.yaml"
  if [ "$gpus" -gt 0 ]; then
    bench astro-2048-gpu config/astro.yaml "$in" --device cuda --threads "$cores" --sweep streams=4 --sweep buffers=auto,2,8 --ceiling
    bench astro-2048-gpu-fits-only "$scratch/astro-fits.yaml" "$in" --device cuda --threads "$cores" --streams 4 --sweep buffers=auto,8
    bench astro-2048-gpu-moffat41 "$scratch/astro-moffat.yaml" "$in" --device cuda --threads "$cores" --streams 8 --buffers-per-stream 4
    bench astro-2048-cpu-1thread config/astro.yaml "$in" --device cpu --images 16 --threads 1
    bench astro-2048-cpu config/astro.yaml "$in" --device cpu --images 64 --threads "$cores"
  else
    bench astro-2048-cpu config/astro.yaml "$in" --device cpu --images 32 --sweep "threads=1,$cores"
  fi
}

part_mosaic() {
  local kindarg=--synthetic
  [ -f datasets/data/astro/ISAAC.2006-04-13T06-32-38.944.fits ] && kindarg="--from datasets/data/astro"
  local size=32000x32000; [ "$gpus" -gt 0 ] || size=16000x16000  # a 2-core host: 1 Gpix, not 4
  local mosaic=${MOSAIC_DIR:-/tmp/imflow-suite-mosaic}  # 4 GB: often more than /dev/shm may hold
  if [ ! -f "$mosaic/.complete-$size" ]; then
    rm -rf "$mosaic"; mkdir -p "$mosaic/in"
    # shellcheck disable=SC2086 # two words
    $py datasets/make_mosaic.py "$mosaic/in/mosaic.fits" --size $size $kindarg || return 1
    touch "$mosaic/.complete-$size"
  fi
  cat "$mosaic/in/mosaic.fits" > /dev/null
  variant "$scratch/astro-tiles.yaml" config/astro.yaml 's/^steps:/tiling: {resident: off}\nsteps:/'
  if [ "$gpus" -gt 0 ]; then
    bench mosaic-32k-gpu-resident config/astro.yaml "$mosaic/in" --device cuda --threads "$cores"
    bench mosaic-32k-gpu-tiles "$scratch/astro-tiles.yaml" "$mosaic/in" --device cuda --threads "$cores" --streams 8
    REPEAT=1 bench mosaic-32k-cpu config/astro.yaml "$mosaic/in" --device cpu --threads "$cores"
  else
    REPEAT=1 bench mosaic-16k-cpu config/astro.yaml "$mosaic/in" --device cpu --threads "$cores"
  fi
}

part_mri() {
  local slices=datasets/data/mri/slices
  [ -d $slices ] || { echo "bench-suite.sh: $slices missing (datasets/fetch_mri.sh)" >&2; exit 1; }
  variant "$scratch/mri-batched.yaml" config/mri-gpu.yaml \
    's/solver: auto, reconstruct: auto, svd_solver: auto, reconstruct_kernel: auto/solver: gpu/'
  if [ "$gpus" -gt 0 ]; then
    bench mri-gpu config/mri-gpu.yaml $slices --device cuda --threads "$cores" --images 14080 --sweep streams=4,8 --sweep batch=auto,64 --ceiling
    bench mri-gpu-batched "$scratch/mri-batched.yaml" $slices --device cuda --threads "$cores" --images 14080
    bench mri-cpu config/mri.yaml $slices --device cpu --threads "$cores" --images 1760
  else
    bench mri-cpu config/mri.yaml $slices --device cpu --images 880 --sweep "threads=1,$cores"
  fi
}

# crowded NAME PIPELINE [crowded_fields.py options...]: 8 crowded fields (tools/crowded_fields.py,
# DEBLEND_DENSITY stars per pixel), SEP timed on 3 of them with the options when the Python has it
# (NAME-<size>[-d<density>]-sep.json), and PIPELINE on them: GPU, CPU 1 thread and all threads.
# CROWDED_POINTS (default "gpu cpu-1thread cpu sep") reruns some of them into a folder that has
# the others.
crowded() {
  local name=$1 pipeline=$2; shift 2
  local size=4096 count=8 density=${DEBLEND_DENSITY:-0.004} sep_args=() points=${CROWDED_POINTS:-gpu cpu-1thread cpu sep}
  [ "$gpus" -gt 0 ] || size=2048
  local tag=$name-$size; [ "$density" = 0.004 ] || tag=$tag-d$density
  local in=$scratch/crowded-$size-$density
  if [[ " $points " == *" sep "* ]] && $py -c "import sep" 2>/dev/null; then
    sep_args=(--time-sep "$out/$tag-sep.json" --sep-fields 3 "$@")
  fi
  if [ ! -f "$in/.complete" ] || [ ${#sep_args[@]} -gt 0 ]; then
    rm -rf "$in"
    $py tools/crowded_fields.py --out "$in" --size $size --count $count --density "$density" "${sep_args[@]}" || return 1
    touch "$in/.complete"
  fi
  if [ "$gpus" -gt 0 ]; then
    [[ " $points " != *" gpu "* ]] || bench $tag-gpu "$pipeline" "$in" --device cuda --threads "$cores" --images 64
    [[ " $points " != *" cpu-1thread "* ]] || bench $tag-cpu-1thread "$pipeline" "$in" --device cpu --threads 1 --images 4
    [[ " $points " != *" cpu "* ]] || bench $tag-cpu "$pipeline" "$in" --device cpu --threads "$cores" --images 32
  else
    bench $tag-cpu "$pipeline" "$in" --device cpu --images 8 --sweep "threads=1,$cores"
  fi
  [ ${#sep_args[@]} -gt 0 ] || log "$name: no SEP in $py, no ratio to SEP"
}

part_deblend() { crowded deblend config/astro-sextractor.yaml; }  # SExtractor's defaults with deblending

part_photometry() {  # the same detection, then astro-photometry.yaml's measure (auto, apertures, flux_radius, windowed)
  { sed '/^  - measure:/,$d' config/astro-sextractor.yaml; sed -n '/^  - measure:/,$p' config/astro-photometry.yaml
    echo "      mask_neighbours: false"; } > "$scratch/photometry.yaml"
  crowded photometry "$scratch/photometry.yaml" --sep-photometry
}

part_peers() {
  [ "$gpus" -gt 0 ] || { log "peers: the CPU-host comparison is tools/peers/run.sh"; return 0; }
  log peers
  rm -rf "$scratch/peers"
  OUT=$scratch/peers IMFLOW=$imflow bash tools/peers/device.sh > "$scratch/peers.log" 2>&1 \
    || { tail -20 "$scratch/peers.log"; echo "bench-suite.sh: peers failed" >&2; return 1; }
  cp "$scratch/peers/device_summary.json" "$out/peers-4096.json"
}

machine_json
status=0
for part in $parts; do
  case $part in
    astro-2048) part_astro || status=1 ;;
    mosaic-32k) part_mosaic || status=1 ;;
    mri) part_mri || status=1 ;;
    peers) part_peers || status=1 ;;
    deblend) part_deblend || status=1 ;;
    photometry) part_photometry || status=1 ;;
    *) echo "bench-suite.sh: unknown part $part" >&2; status=1 ;;
  esac
done
$py tools/bench-report.py "$out"
rm -rf "$scratch/bench"
exit $status
