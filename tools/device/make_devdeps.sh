#!/usr/bin/env bash
# Make .devdeps for the lent GPU machine (Ubuntu 24.04, no package registry): the Debian packages
# imflow builds against that it lacks, for tools/device/setup.sh to unpack into /opt/deps.
# Run here (it needs apt-get): bash tools/device/make_devdeps.sh [DIR]   (default .devdeps)
set -euo pipefail
cd "$(dirname "$0")/../.."
bash ../shared/tools/offline-debs.sh "${1:-.devdeps}" \
  libnifti2-dev libnifti2-2 libniftiio-dev libniftiio2 libznz-dev libznz3 libnifticdf-dev libnifticdf2 \
  libpng-dev libpng16-16 zlib1g-dev nlohmann-json3-dev wcslib-dev libwcs7
