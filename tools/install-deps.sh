#!/usr/bin/env bash
# Install imflow's build and test dependencies from Debian's packages (only what is missing).
# Run as root on Debian 12 (or with sudo). Safe to run repeatedly.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config git
          libtbb-dev libcfitsio-dev libcfitsio-bin wcslib-dev libstb-dev libyaml-cpp-dev libspdlog-dev catch2 libcli11-dev libdragonbox-dev libdeflate-dev
          nlohmann-json3-dev zlib1g-dev libbz2-dev liblapacke-dev libopenblas-dev libopenmpi-dev openmpi-bin libpng-dev libnifti2-dev
          python3-numpy python3-scipy python3-astropy python3-matplotlib python3-pil
          source-extractor scamp psfex swarp)  # the peers the FITS_LDAC and weight-map tests run
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
