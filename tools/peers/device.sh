#!/usr/bin/env bash
# On the offline GPU machine, one call: installs the carried peers (install.sh --from), builds
# imflow with CUDA (from the carried .devdeps, as tools/gpu/setup.sh), makes two 4096x4096
# synthetic fields (Gaussian and Moffat PSF), then times on the same images in the same call:
# SEP (background + extract, one core), SExtractor (whole process), imflow on the GPU (`imflow run`
# per-item stages and `imflow bench` throughput) and imflow on one CPU thread. JSON (and the
# catalogs, for crossmatch.py back home) to $OUT; $OUT/device_summary.json has the ratios.
#
# Here first:  tools/peers/install.sh --download out/peers-carry      (SEP + NumPy for Python 3.12, .debs)
# Then:        run with carry [".devdeps", "out/peers-carry"] the command  bash tools/peers/device.sh
# Env: PIPELINE (default config/peers-mesh.yaml when this imflow accepts it, else
# config/peers-global.yaml), SIZE (4096), IMAGES (bench images, 512: over 64 a run lasts ~0.2 s, mostly
# filling and draining the pipeline), IMFLOW (a built binary: skips
# the build), PEERS_CARRY (out/peers-carry), BENCH_ARGS (extra `imflow bench` flags, e.g. a sweep).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/logs"; L=$OUT/logs
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../.." || exit 1
t0=$(date +%s); stamp() { echo "== device.sh: $1 at $(( $(date +%s) - t0 )) s"; }
SIZE=${SIZE:-4096} IMAGES=${IMAGES:-512} CARRY=${PEERS_CARRY:-out/peers-carry}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1  # the peers on one core

python3 --version | tee "$L/python.txt"
bash tools/peers/install.sh --from "$CARRY" /opt/peers > "$L/install.log" 2>&1 \
    || { cat "$L/install.log"; exit 1; }
grep -v WARNING "$L/install.log"
# shellcheck disable=SC1091
. /opt/peers/env.sh
stamp "peers installed"

imflow=${IMFLOW:-}
if [[ -z $imflow ]]; then
    mkdir -p /opt/deps; for deb in .devdeps/*.deb; do dpkg -x "$deb" /opt/deps; done
    export CMAKE_PREFIX_PATH=/opt/deps/usr PKG_CONFIG_SYSROOT_DIR=/opt/deps
    export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:/opt/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:${LD_LIBRARY_PATH:-}
    export PKG_CONFIG_PATH=/opt/deps/usr/lib/x86_64-linux-gnu/pkgconfig:/opt/deps/usr/share/pkgconfig
    cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DIMFLOW_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DCMAKE_CXX_FLAGS=-I/opt/deps/usr/include > "$L/cmake.log" 2>&1 || { tail -30 "$L/cmake.log"; exit 1; }
    imflow=build-dev/imflow
    # A failed build still times the peers (the summary then has no imflow numbers).
    ninja -C build-dev -j 16 imflow_cli > "$L/build.log" 2>&1 || { grep -B2 -A12 -m3 error "$L/build.log"; imflow=""; }
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$L/gpu.txt"
pipeline=${PIPELINE:-config/peers-mesh.yaml}
if [[ -n $imflow ]]; then
    $imflow --version
    $imflow validate "$pipeline" > /dev/null 2>&1 || pipeline=config/peers-global.yaml
fi
echo "pipeline: $pipeline"
stamp "imflow built"

fields=/tmp/peers-fields; rm -rf "$fields"; mkdir -p "$fields/truth"
python3 tools/peers/make_starfield.py --out "$fields/truth" --size "$SIZE" --psf gauss --psf moffat
mv "$fields/truth/"*.fits "$fields/"; cp "$fields/truth/"*.truth.* "$OUT/"
stamp "fields made"

python3 tools/peers/sep_run.py --images "$fields" --out "$OUT/sep" --repeat 3 || exit 1
stamp "SEP timed"
python3 tools/peers/sex_run.py --images "$fields" --out "$OUT/sextractor" || echo "SExtractor failed (rc $?)"
stamp "SExtractor timed"
if [[ -n $imflow ]]; then
    python3 tools/peers/imflow_run.py --imflow "$imflow" --pipeline "$pipeline" --images "$fields" \
        --out "$OUT/imflow-gpu" --device cuda --threads 0 --label imflow-gpu
    python3 tools/peers/imflow_run.py --imflow "$imflow" --pipeline "$pipeline" --images "$fields" \
        --out "$OUT/imflow-cpu-t1" --device cpu --threads 1 --label imflow-cpu-t1
    stamp "imflow run"
    $imflow -q bench "$pipeline" --input "$fields" --device cuda --images "$IMAGES" --repeat 3 ${BENCH_ARGS:-} \
        --out "$OUT/bench-gpu" > "$L/bench-gpu.log" 2>&1; echo "bench gpu rc=$?"; tail -5 "$L/bench-gpu.log"
    stamp "imflow bench"
fi

python3 - "$OUT" "$pipeline" <<'PY' | tee "$OUT/device_summary.txt"
import json, os, statistics, sys
out, pipeline = sys.argv[1], sys.argv[2]
load = lambda p: json.load(open(os.path.join(out, p)))
sep = load("sep/timing.json")
sep_s = statistics.median(i["seconds"] for i in sep["images"])
summary = {"pipeline": pipeline, "gpu": open(os.path.join(out, "logs/gpu.txt")).read().strip(),
           "image": f'{sep["images"][0]["width"]}x{sep["images"][0]["height"]}',
           "sep_seconds_per_image": sep_s, "sep_version": sep["version"]}
try:
    sex = load("sextractor/timing.json")
    summary["sextractor_process_seconds_per_image"] = statistics.median(i["seconds"] for i in sex["images"])
except (OSError, KeyError):
    pass
for label in ("imflow-gpu", "imflow-cpu-t1"):
    try:
        t = load(f"{label}/timing.json")
    except OSError:
        summary[f"{label}_error"] = "no timing (imflow not built or failed: logs/)"
        continue
    n = len(t["images"])
    summary[f"{label}_compute_seconds_per_image"] = statistics.median(i["seconds"] for i in t["images"])
    summary[f"{label}_wall_seconds_per_image"] = t["imflow_wall_seconds"] / n
    key = "gpu_run_wall" if label == "imflow-gpu" else "cpu_t1_wall"
    summary[f"sep_over_imflow_{key}"] = sep_s / summary[f"{label}_wall_seconds_per_image"]
    key = "gpu_compute" if label == "imflow-gpu" else "cpu_t1_compute"
    summary[f"sep_over_imflow_{key}"] = sep_s / summary[f"{label}_compute_seconds_per_image"]
try:
    point = load("bench-gpu/bench.json")["points"][0]
    summary["imflow_gpu_bench_images_per_second"] = point["images_per_second"]["median"]
    summary["imflow_gpu_bench_seconds_per_image"] = 1.0 / point["images_per_second"]["median"]
    summary["sep_over_imflow_gpu_bench"] = sep_s * point["images_per_second"]["median"]
except (OSError, KeyError, IndexError) as exc:
    summary["bench_error"] = repr(exc)
json.dump(summary, open(os.path.join(out, "device_summary.json"), "w"), indent=1)
print(json.dumps(summary, indent=1))
PY
# $OUT comes back only with few files: keep the timings and summary loose, the rest in one tarball.
for d in sep sextractor imflow-gpu imflow-cpu-t1; do [[ -f $OUT/$d/timing.json ]] && cp "$OUT/$d/timing.json" "$OUT/timing-$d.json"; done
# shellcheck disable=SC2046  # the existing folders, one word each
tar czf "$OUT/catalogs-and-logs.tar.gz" -C "$OUT" $(cd "$OUT" && ls -d sep sextractor imflow-gpu imflow-cpu-t1 logs 2>/dev/null) \
    && rm -rf "$OUT"/{sep,sextractor,imflow-gpu,imflow-cpu-t1,logs} "$OUT"/*.truth.csv
stamp finished
