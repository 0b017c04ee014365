#!/usr/bin/env bash
# datasets/fetch_mri.sh [DESTDIR]
#
# Fetches real MRI data for imflow's MRI workload from two Debian packages, downloaded with
# `apt-get download` and unpacked with `dpkg -x` into a temporary directory (nothing is
# installed); provenance and licences in datasets/README.md (MRI section):
#   mricron-data               Colin27 T1 head ch2.nii.gz (181x217x181, uint8) and its
#                              brain-extracted ch2bet.nii.gz (BSD-3-clause per Debian copyright)
#   insighttoolkit5-examples   ITK example MRI slices (PNG) and a small T1 volume (Apache-2.0)
#
# Result (DESTDIR defaults to datasets/data, which is gitignored):
#   DESTDIR/mri/volumes/   ch2.nii.gz, ch2bet.nii.gz, KmeansTest_T1UCharRaw.nii.gz
#   DESTDIR/mri/png/       ITK brain slices (8-bit PNG, some palette/RGB)
#   DESTDIR/mri/slices/    880 axial 181x217 8-bit PNG slices of ch2 + ch2bet for the benchmark
#                          (tools/make_mri_slices.py; 362 distinct slices, repeats named _rNN)
#   DESTDIR/mri/.complete  marker; when present (and matching) the script exits early
set -euo pipefail

MARKER_VERSION="imflow-mri-v1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="${1:-$here/data}"
mkdir -p "$DEST/mri"
DEST="$(cd "$DEST" && pwd)/mri"

if [[ -f "$DEST/.complete" ]] && grep -qx "$MARKER_VERSION" "$DEST/.complete"; then
    echo "fetch_mri.sh: $DEST already complete; nothing to do"
    exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
download() {  # download PKG: fetch and unpack into $tmp/x, print the version
    (
        cd "$tmp"
        if ! apt-get download -q "$1" >/dev/null 2>&1; then
            echo "fetch_mri.sh: apt-get download $1 failed, running apt-get update -qq and retrying" >&2
            apt-get update -qq
            apt-get download -q "$1" >/dev/null 2>&1
        fi
    )
    local deb
    deb="$(ls "$tmp"/"$1"_*.deb | head -n1)"
    dpkg -x "$deb" "$tmp/x"
    dpkg-deb -f "$deb" Version
}

mricron_version="$(download mricron-data)"
itk_version="$(download insighttoolkit5-examples)"
templates="$tmp/x/usr/share/mricron/templates"
itk="$tmp/x/usr/share/doc/insighttoolkit5-examples/examples/Data"

mkdir -p "$DEST/volumes" "$DEST/png" "$DEST/slices"
install -m 0644 "$templates/ch2.nii.gz" "$templates/ch2bet.nii.gz" "$itk/KmeansTest_T1UCharRaw.nii.gz" "$DEST/volumes/"
for name in BrainProtonDensitySlice BrainT1Slice BrainMidSagittalSlice BrainProtonDensitySlice256x256 FatMRISlice; do
    install -m 0644 "$itk/$name.png" "$DEST/png/"
done
install -m 0644 "$tmp/x/usr/share/doc/mricron-data/copyright" "$DEST/COPYRIGHT.mricron-data"
install -m 0644 "$tmp/x/usr/share/doc/insighttoolkit5-examples/copyright" "$DEST/COPYRIGHT.insighttoolkit5-examples"

rm -f "$DEST/slices/"*.png
if ! /usr/bin/python3 -c "import numpy" 2>/dev/null; then  # the slices are cut with Debian's NumPy
    if [ "$(id -u)" = 0 ]; then apt-get install -y -qq python3-numpy > /dev/null
    else echo "fetch_mri.sh: needs Debian's python3-numpy (tools/install-deps.sh)" >&2; exit 1; fi
fi
/usr/bin/python3 "$here/../tools/make_mri_slices.py" "$DEST/volumes/ch2.nii.gz" "$DEST/volumes/ch2bet.nii.gz" \
    -o "$DEST/slices" --axis 2 --count 880

printf '%s\nmricron-data %s\ninsighttoolkit5-examples %s\n' "$MARKER_VERSION" "$mricron_version" "$itk_version" \
    > "$DEST/.complete"
echo "fetch_mri.sh: mricron-data $mricron_version, insighttoolkit5-examples $itk_version -> $DEST:" \
     "$(ls "$DEST/volumes" | wc -l) volumes, $(ls "$DEST/png" | wc -l) PNG slices, $(ls "$DEST/slices" | wc -l) benchmark slices"
