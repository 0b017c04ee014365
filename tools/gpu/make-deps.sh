#!/usr/bin/env bash
# For a GPU host without a package registry (e.g. Ubuntu 24.04 with CUDA): download here, with
# apt-get, the Debian packages imflow builds against into DIR (default .devdeps), to be carried
# there and unpacked by tools/gpu/setup.sh into /opt/deps (dpkg -x: nothing is installed).
# usage: bash tools/gpu/make-deps.sh [DIR] [extra-package ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.devdeps}; [ $# -gt 0 ] && shift
mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
packages=(libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libhwloc15 libcfitsio-dev libcfitsio10 libstb-dev libstb0 libdragonbox-dev
          libcli11-dev liblapacke-dev liblapacke libopenblas-dev libopenblas0 libopenblas0-pthread
          libopenblas-pthread-dev liblapack3 libblas3 libgfortran5 catch2
          libnifti2-dev libnifti2-2 libniftiio-dev libniftiio2 libznz-dev libznz3 libnifticdf-dev libnifticdf2
          libpng-dev libpng16-16 libdeflate-dev libdeflate0 zlib1g-dev libbz2-dev nlohmann-json3-dev wcslib-dev libwcs7 "$@")
apt-get update -qq > /dev/null 2>&1 || true
(cd "$dir" && apt-get download "${packages[@]}" 2>&1 | grep -E "^E:" || true)
# The Python module's build (nanobind), pytest for its tests (tests/python, pure-Python wheels)
# and SEP 1.4.1, the reference its GPU timings are compared with in the same call, as wheels for
# the CPython versions a GPU host may have.
mkdir -p "$dir/python"
python3 -m pip download -q --disable-pip-version-check --no-deps -d "$dir/python" "nanobind>=2.0" || true
for version in 3.10 3.11 3.12 3.13; do
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: -d "$dir/python" \
    --python-version "$version" --platform manylinux2014_x86_64 "sep==1.4.1" || true
  python3 -m pip download -q --disable-pip-version-check --only-binary :all: -d "$dir/python" \
    --python-version "$version" --platform manylinux2014_x86_64 pytest || true
done
echo "make-deps.sh: $(ls -1 "$dir"/*.deb | wc -l) packages, $(ls -1 "$dir"/python | wc -l) wheels in $dir ($(du -sh "$dir" | cut -f1))"
