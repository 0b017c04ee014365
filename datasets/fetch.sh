#!/usr/bin/env bash
# datasets/fetch.sh [DESTDIR]
#
# Fetches real astronomical test images for imflow from Debian's
# `eso-midas-testdata` package (ESO-MIDAS test suite, GPL-2+; see
# datasets/README.md). The .deb is downloaded with `apt-get download` into a
# temporary directory and unpacked with `dpkg -x` (nothing is installed).
#
# Result (DESTDIR defaults to datasets/data, which is gitignored):
#   DESTDIR/astro/     2-D sky images and sky data cubes (FITS, original bytes)
#   DESTDIR/calib/     2-D calibration frames (flat / dome lamp): valid image
#                      input, but no sky sources
#   DESTDIR/astro-fz/  fpack tile-compressed copies (.fits.fz), if fpack is
#                      available (Debian package libcfitsio-bin; installed on
#                      demand when running as root)
#   DESTDIR/.complete  marker; when present (and matching) the script exits early
#
# Idempotent: re-running on a complete DESTDIR is a no-op.
set -euo pipefail

PKG=eso-midas-testdata
SRC_SUBDIR=usr/lib/eso-midas/22FEB/test/prim
MARKER_VERSION="imflow-datasets-v1"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="${1:-$here/data}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"

# The real MRI volumes and slices (Debian's mricron-data and insighttoolkit5-examples) into
# DEST/mri: datasets/fetch_mri.sh, idempotent on its own.
"$here/fetch_mri.sh" "$DEST"

if [[ -f "$DEST/.complete" ]] && grep -qx "$MARKER_VERSION" "$DEST/.complete"; then
    echo "fetch.sh: $DEST already complete ($(find "$DEST" -name '*.fits*' | wc -l) FITS files); nothing to do"
    exit 0
fi

# Source name in the package -> destination name (':' is not portable in names).
SKY_FILES=(
    "ISAAC.2006-04-13T06:32:38.944.fits:ISAAC.2006-04-13T06-32-38.944.fits"
    "dss_test1.fits:dss_test1.fits"
    "dss_test2.fits:dss_test2.fits"
    "image_M12c.fits:image_M12c.fits"
    "VISIR.2004-09-30T03c17c49.095.fits:VISIR.2004-09-30T03c17c49.095.fits"
    "timmi2.fits:timmi2.fits"
    "ccd.fits:ccd.fits"
    "hbo.fits:hbo.fits"
)
CALIB_FILES=(
    "NOT.fits:NOT.fits"
    "vimos.fits:vimos.fits"
)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

(
    cd "$tmp"
    # apt-get download as root warns that _apt cannot write here; harmless.
    if ! apt-get download -q "$PKG" >/dev/null 2>&1; then
        echo "fetch.sh: apt-get download failed, running apt-get update -qq and retrying" >&2
        apt-get update -qq
        apt-get download -q "$PKG" >/dev/null 2>&1
    fi
)
deb="$(ls "$tmp"/${PKG}_*.deb | head -n1)"
version="$(dpkg-deb -f "$deb" Version)"
dpkg -x "$deb" "$tmp/x"
src="$tmp/x/$SRC_SUBDIR"

copy_set() {  # copy_set SUBDIR "src:dst"...
    local sub="$1"; shift
    mkdir -p "$DEST/$sub"
    local pair
    for pair in "$@"; do
        # split on the LAST ':' (source names may contain ':', e.g. ISAAC)
        local s="${pair%:*}" d="${pair##*:}"
        install -m 0644 "$src/$s" "$DEST/$sub/$d"
    done
}
copy_set astro "${SKY_FILES[@]}"
copy_set calib "${CALIB_FILES[@]}"
install -m 0644 "$tmp/x/usr/share/doc/$PKG/copyright" "$DEST/COPYRIGHT.eso-midas-testdata"

# Tile-compressed (fpack) copies: Rice on integer data (lossless), and a
# lossless GZIP-compressed float image (-g -q 0: no quantisation).
nfz=0
if ! command -v fpack >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; then
    apt-get install -y -qq libcfitsio-bin >/dev/null 2>&1 || \
        { apt-get update -qq && apt-get install -y -qq libcfitsio-bin >/dev/null 2>&1; } || true
fi
if command -v fpack >/dev/null 2>&1; then
    mkdir -p "$DEST/astro-fz"
    rm -f "$DEST/astro-fz/"*.fz
    cp "$DEST/astro/dss_test1.fits" "$DEST/astro-fz/dss_test1.fits"
    fpack -r -D -Y "$DEST/astro-fz/dss_test1.fits"                  # -> dss_test1.fits.fz (RICE_1, int16)
    cp "$DEST/astro/ISAAC.2006-04-13T06-32-38.944.fits" "$DEST/astro-fz/isaac.fits"
    fpack -g -q 0 -D -Y "$DEST/astro-fz/isaac.fits"                 # -> isaac.fits.fz (GZIP_1, float, lossless)
    nfz=$(ls "$DEST/astro-fz/"*.fz | wc -l)
else
    echo "fetch.sh: warning: fpack not available, skipping astro-fz/" >&2
fi

printf '%s\n%s %s\n' "$MARKER_VERSION" "$PKG" "$version" > "$DEST/.complete"
echo "fetch.sh: $PKG $version -> $DEST: ${#SKY_FILES[@]} sky images in astro/, ${#CALIB_FILES[@]} calibration frames in calib/, $nfz fpack'd files in astro-fz/"
