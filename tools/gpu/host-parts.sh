#!/usr/bin/env bash
# Where the host's time goes per item in the shipped pipelines on a GPU host, for one or more
# imflow builds alternated run by run: `imflow run --trace` of config/astro.yaml over the 512
# astro-2048 images (tools/gpu/make-astro-2048.py from the real ISAAC frame), `imflow bench --trace`
# of config/mri-gpu.yaml over 14,080 real slices (the 880 of datasets/data/mri/slices, cycled),
# and `imflow run --trace` of config/astro.yaml on the 32,000 x 32,000 mosaic of real cells
# (datasets/make_mosaic.py; GPU-resident), each after a warm-up run. Each trace is summed by
# tools/trace_parts.py (every stage and its parts, wall and thread CPU time, per item) into one
# JSON (under KEY in FILE, whose other keys are kept; the key's earlier runs are replaced),
# labelled BUILD/PART/RUN. Inputs are made once under SCRATCH (/dev/shm; the 4 GB mosaic under /tmp),
# outputs go to /dev/shm: the figures are the host's, not a disk's.
#
# usage: tools/gpu/host-parts.sh [--parts "astro mri mosaic"] [--runs N] [--scratch DIR]
#                                --out FILE.json [--key KEY] LABEL=BINARY [LABEL=BINARY ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
parts="astro mri mosaic" runs=2 scratch=/dev/shm/imflow-host-parts out="" key=host_parts builds=()
while [ $# -gt 0 ]; do
  case $1 in
    --parts) parts=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --key) key=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *=*) builds+=("$1"); shift ;;
    *) echo "host-parts.sh: unknown argument $1 (see --help)" >&2; exit 1 ;;
  esac
done
[ ${#builds[@]} -gt 0 ] && [ -n "$out" ] || { echo "host-parts.sh: name --out and at least one LABEL=BINARY" >&2; exit 1; }
isaac=datasets/data/astro/ISAAC.2006-04-13T06-32-38.944.fits
[ -f "$isaac" ] || { echo "host-parts.sh: $isaac missing (datasets/fetch.sh)" >&2; exit 1; }
mkdir -p "$scratch"
python3 - "$out" "$key" <<'PY'  # this key's earlier runs go; the file's other keys stay
import json, pathlib, sys
path = pathlib.Path(sys.argv[1])
document = json.loads(path.read_text()) if path.exists() else {}
document[sys.argv[2]] = {"device": "", "runs": []}
path.write_text(json.dumps(document, indent=1) + "\n")
PY
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
trace() {  # build label, part, run, then the imflow command line after --
  local label=$1 part=$2 run=$3; shift 4
  rm -rf "$scratch/out" "$scratch/trace.json" "$scratch/bench"
  "$@" > "$scratch/log.txt" 2>&1 || { tail -5 "$scratch/log.txt"; exit 1; }
  local file=$scratch/trace.json
  [ -f "$file" ] || file=$(ls "$scratch"/bench/traces/*.trace.json | tail -1)
  python3 tools/trace_parts.py "$file" --json "$out" --key "$key" --label "$label/$part/$run"
}
for part in $parts; do
  case $part in
    astro)
      if [ ! -f "$scratch/a2048/.complete" ]; then
        rm -rf "$scratch/a2048"; python3 tools/gpu/make-astro-2048.py "$isaac" "$scratch/a2048" > /dev/null
        touch "$scratch/a2048/.complete"
      fi
      cat "$scratch"/a2048/c*/*.fits > /dev/null ;;
    mosaic)
      mosaic=${MOSAIC_DIR:-/tmp/imflow-suite-mosaic}  # bench-suite.sh's: made once for both
      if [ ! -f "$mosaic/.complete-32000x32000" ]; then
        rm -rf "$mosaic"; mkdir -p "$mosaic/in"
        python3 datasets/make_mosaic.py "$mosaic/in/mosaic.fits" --size 32000x32000 --from datasets/data/astro > /dev/null
        touch "$mosaic/.complete-32000x32000"
      fi
      cat "$mosaic/in/mosaic.fits" > /dev/null ;;
    mri) ;;
    *) echo "host-parts.sh: unknown part $part (astro, mri, mosaic)" >&2; exit 1 ;;
  esac
  if [ "$part" != mri ]; then  # a warm-up run per build (imflow bench warms MRI up itself)
    input=$scratch/a2048; [ "$part" = mosaic ] && input=$mosaic/in
    for build in "${builds[@]}"; do
      rm -rf "$scratch/out"; "${build#*=}" -q run config/astro.yaml -i "$input" -o "$scratch/out" --device cuda > /dev/null 2>&1
    done
  fi
  for run in $(seq "$runs"); do
    for build in "${builds[@]}"; do
      label=${build%%=*} binary=${build#*=}
      case $part in
        astro)
          trace "$label" astro "$run" -- "$binary" -q run config/astro.yaml -i "$scratch/a2048" -o "$scratch/out" \
            --device cuda --trace "$scratch/trace.json" ;;
        mri)
          trace "$label" mri "$run" -- "$binary" -q bench config/mri-gpu.yaml --input datasets/data/mri/slices \
            --device cuda --images 14080 --repeat 1 --warmup 1 --trace --out "$scratch/bench" ;;
        mosaic)
          trace "$label" mosaic "$run" -- "$binary" -q run config/astro.yaml -i "$mosaic/in" -o "$scratch/out" \
            --device cuda --trace "$scratch/trace.json" ;;
      esac
    done
  done
done
rm -rf "$scratch/out" "$scratch/bench" "$scratch/trace.json"
python3 - "$out" "$key" "$device, $(nproc) cores" <<'PY'
import json, pathlib, sys
path = pathlib.Path(sys.argv[1])
document = json.loads(path.read_text())
document[sys.argv[2]]["device"] = sys.argv[3]
path.write_text(json.dumps(document, indent=1) + "\n")
PY
echo "host-parts.sh: wrote $out ($key)"
