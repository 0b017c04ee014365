#!/usr/bin/env bash
# Several GPUs in one process (a machine with 2 GPUs): throughput with --devices 0 against
# --devices 0,1 on a GPU-bound astronomy set (512 2048x2048 float32 images made from the ISAAC
# frame, read from page cache) and on the all-GPU MRI pipeline. Summaries under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. tools/device/setup.sh || exit 1
nvidia-smi -L | tee "$OUT/gpus.txt"
PYTHONUNBUFFERED=1 python3 - <<'PY'
import numpy as np, os
name = next(f for f in sorted(os.listdir(".mgcarry")) if f.startswith("ISAAC"))  # carried beside the tree
raw = open(".mgcarry/" + name, "rb").read()
# The ISAAC frame: BITPIX -32, 1024x1024, one header block set.
end = raw.find(b"END" + b" " * 77); start = (end // 2880 + 1) * 2880
isaac = np.frombuffer(raw[start:start + 1024 * 1024 * 4], dtype=">f4").reshape(1024, 1024)
base = np.tile(isaac, (2, 2)); rng = np.random.default_rng(4)
hdr = "".join(f"{c:<80}" for c in ["SIMPLE  =                    T", "BITPIX  =                  -32", "NAXIS   =                    2",
      "NAXIS1  =                 2048", "NAXIS2  =                 2048", "END"]).ljust(2880).encode()
os.makedirs("/tmp/a2048/u", exist_ok=True)
for i in range(64):
    img = np.roll(base, (int(rng.integers(2048)), int(rng.integers(2048))), axis=(0, 1)).astype(">f4").tobytes()
    with open(f"/tmp/a2048/u/f{i:03d}.fits", "wb") as f: f.write(hdr + img + b"\0" * (-len(img) % 2880))
for c in range(8):
    os.makedirs(f"/tmp/a2048/c{c}", exist_ok=True)
    for i in range(64): os.link(f"/tmp/a2048/u/f{i:03d}.fits", f"/tmp/a2048/c{c}/f{i:03d}.fits")
PY
rm -rf /tmp/a2048/u
imflow=build-dev/imflow
sed 's/solver: auto, reconstruct: auto, svd_solver: auto/solver: gpu, reconstruct: gpu, svd_solver: gesvdj/' config/mri-gpu.yaml > /tmp/mri-allgpu.yaml
$imflow -q run config/astro.yaml --input /tmp/a2048 --output /tmp/o --device cuda --devices 0,1 >/dev/null 2>&1  # warm-up
for devices in 0 0,1; do
  for r in 1 2; do
    rm -rf /tmp/o; $imflow -q run config/astro.yaml --input /tmp/a2048 --output /tmp/o --device cuda --devices $devices \
      --threads 32 --streams 8 --summary "$OUT/astro_devices_${devices/,/_}_r$r.json"
    rm -rf /tmp/m; $imflow -q run /tmp/mri-allgpu.yaml --input datasets/data/mri/slices --output /tmp/m --device cuda \
      --devices $devices --threads 32 --streams 8 --summary "$OUT/mri_devices_${devices/,/_}_r$r.json"
  done
done
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + "/*_devices_*.json")):
    s = json.load(open(f)); t = s["totals"]
    per = [(d["device"], d["items"], round(d["kernel_busy_seconds"], 2)) for d in s.get("gpu", {}).get("devices", [])]
    print(f"{f.split('/')[-1]:30} {t['items']:5} items {t['wall_seconds']:6.3f} s {t['images_per_second']:7.1f} img/s per-device {per}")
PY
