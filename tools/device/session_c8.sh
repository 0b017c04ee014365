#!/usr/bin/env bash
# Device check after the tiling pre-pass race fix (session 4): the GPU tiling test 8 times, tiled
# runs with convolve on the real images (CPU and GPU) against the whole-image run, all GPU tests.
set -uo pipefail
TARGETS="imflow_gpu_tests imflow_cli" SETUP_LOGS=/tmp . tools/device/setup.sh || exit 1
for i in 1 2 3 4 5 6 7 8; do timeout 60 build-dev/tests/gpu/imflow_gpu_tests "[tiling]" > /tmp/t.log 2>&1; echo "tiling $i rc=$?"; done
printf 'output: {formats: [csv]}\nsteps: [{convolve: {size: 5, sigma: 1.0}}, background, segment, label, measure]\n' > /tmp/conv.yaml
for mode in whole tile256 tile256 tile256 cputile cputile cputile; do
  case $mode in whole) a="--device cuda";; tile256) a="--device cuda --tile 256";; cputile) a="--device cpu --tile 256";; esac
  rm -rf /tmp/o; build-dev/imflow -q run /tmp/conv.yaml --input datasets/data/astro --output /tmp/o $a > /dev/null 2>&1
  echo "$mode rows $(cat /tmp/o/*.cat.csv | wc -l)"
done
timeout 200 build-dev/tests/gpu/imflow_gpu_tests > /tmp/g.log 2>&1; echo "all gpu tests rc=$?"; grep -a -E "test cases|assertions" /tmp/g.log | tail -2
