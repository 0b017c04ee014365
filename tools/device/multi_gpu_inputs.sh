#!/usr/bin/env bash
# Inputs of the several-GPU runs; source it after tools/device/setup.sh. Makes /tmp/a2048
# (ASTRO_REPEAT hard-linked copies of 512 2048x2048 float32 FITS made from the ISAAC frame: one
# page-cache copy), /tmp/mri_in (REPEAT hard-linked copies of the carried MRI slices) and
# $MRI, the all-GPU batched MRI pipeline (config/mri-gpu.yaml with solver: gpu, recursive input).
rm -rf /tmp/a2048 /tmp/a2048.base /tmp/mri_in
python3 tools/device/make_astro_2048.py datasets/data/astro/ISAAC*.fits /tmp/a2048.base
mkdir -p /tmp/a2048; for r in $(seq 1 "${ASTRO_REPEAT:-4}"); do cp -al /tmp/a2048.base /tmp/a2048/r$r; done
echo "astronomy inputs: $(find /tmp/a2048 -name '*.fits' | wc -l) files"
SLICES=${SLICES:-datasets/data/mri/slices}
for r in $(seq 1 "${REPEAT:-64}"); do mkdir -p /tmp/mri_in/r$r; ln -f "$SLICES"/*.png /tmp/mri_in/r$r/; done
echo "MRI inputs: $(find /tmp/mri_in -name '*.png' | wc -l) files"
MRI=/tmp/mri-batched.yaml
sed -e 's/solver: auto, reconstruct: auto, svd_solver: auto, reconstruct_kernel: auto/solver: gpu/' \
    -e 's/patterns: \["\*.png"\]/patterns: ["*.png"]\n  recursive: true/' config/mri-gpu.yaml > $MRI
