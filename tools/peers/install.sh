#!/usr/bin/env bash
# Installs the peers imflow is compared with (SExtractor from Debian, SEP/photutils/astropy from
# PyPI, pinned in requirements.txt), or carries them to an offline machine and installs them there.
#
#   tools/peers/install.sh                      apt-get source-extractor; pip install the pins into
#                                               the python3 on PATH (idempotent)
#   tools/peers/install.sh --download DIR [--full] [--python 3.12,...]
#                                               .debs (apt-get download) into DIR/debs and wheels
#                                               (pip download, binary only) for each Python
#                                               version into DIR/wheels; default: SEP + NumPy only
#                                               (requirements-device.txt; 24 MB in all) for Python
#                                               3.12 (Ubuntu 24.04's); --full: every pin
#   tools/peers/install.sh --from DIR [PREFIX]  offline: dpkg -x the .debs into PREFIX (default
#                                               /opt/peers), pip install --no-index --find-links
#                                               into PREFIX/py (unzip when pip is missing); writes
#                                               PREFIX/env.sh (PATH, LD_LIBRARY_PATH, PYTHONPATH)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=${PYTHON:-python3}
DEBS=(source-extractor libatlas3-base libfftw3-single3 libgfortran5 libquadmath0 libgomp1)

die() { echo "install.sh: $*" >&2; exit 1; }

print_versions() {
    echo "source-extractor: $(command -v source-extractor >/dev/null && source-extractor --version 2>&1 | head -1 || echo missing)"
    "$PY" - <<'PY' || true
import importlib
for name in ("sep", "photutils", "astropy", "numpy", "scipy"):
    try:
        print(f"{name}: {importlib.import_module(name).__version__}")
    except Exception as exc:  # noqa: BLE001 - report, do not fail
        print(f"{name}: missing ({exc.__class__.__name__})")
PY
}

install_online() {
    if ! command -v source-extractor >/dev/null; then
        [[ $(id -u) == 0 ]] || die "source-extractor is missing and apt-get needs root"
        apt-get update -qq || die "apt-get update failed"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq source-extractor >/dev/null \
            || die "apt-get install source-extractor failed"
    fi
    if ! "$PY" - "$here/requirements.txt" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
pins = [l.split("#")[0].strip() for l in open(sys.argv[1]) if l.split("#")[0].strip()]
sys.exit(any(version(n) != v for n, v in (p.split("==") for p in pins)))
PY
        "$PY" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt" \
            || die "pip install -r $here/requirements.txt failed (is PyPI reachable?)"
    fi
    print_versions
}

download() {
    local dir=$1 full=$2 pys=$3 req="$here/requirements-device.txt"
    [[ $full == 1 ]] && req="$here/requirements.txt"
    mkdir -p "$dir/debs" "$dir/wheels"
    dir="$(cd "$dir" && pwd)"
    # apt-get download as root warns that _apt cannot write here; harmless.
    (cd "$dir/debs" && apt-get download "${DEBS[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
    for v in $(echo "$pys" | tr ',' '\n' | sort -u); do
        "$PY" -m pip download -q --disable-pip-version-check -r "$req" -d "$dir/wheels" \
            --only-binary=:all: --implementation cp --python-version "$v" \
            --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
            --platform manylinux2014_x86_64 || die "pip download for Python $v failed"
    done
    cp "$req" "$dir/requirements.txt"
    ls -la "$dir/debs" "$dir/wheels"
    du -sh "$dir"
}

install_from() {
    local dir prefix=${2:-/opt/peers}
    dir="$(cd "$1" 2>/dev/null && pwd)" || die "--from $1: no such directory"
    ls "$dir"/debs/*.deb >/dev/null 2>&1 || die "--from $dir: no debs/*.deb (made by --download)"
    mkdir -p "$prefix/root" "$prefix/py"
    for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$prefix/root"; done
    local py_tag pkgs
    py_tag=$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
    pkgs=$(grep -v '^#' "$dir/requirements.txt" | awk 'NF')
    if "$PY" -m pip --version >/dev/null 2>&1; then
        local extra=()  # PEP 668 (Ubuntu 24.04): installing into our own --target is fine
        # pip's help read whole first: `| grep -q` under pipefail fails when grep exits early.
        local pip_help; pip_help=$("$PY" -m pip install --help 2>/dev/null || true)
        grep -q break-system-packages <<< "$pip_help" && extra=(--break-system-packages)
        # shellcheck disable=SC2086
        "$PY" -m pip install -q --disable-pip-version-check --no-index --find-links "$dir/wheels" \
            --target "$prefix/py" --upgrade ${PEERS_NO_DEPS:+--no-deps} "${extra[@]}" $pkgs || die "pip install from $dir/wheels failed"
    else
        # No pip (a bare Ubuntu python3): a wheel is a zip laid out for site-packages.
        local found=0
        for whl in "$dir"/wheels/*.whl; do
            case "$whl" in *-$py_tag-*|*-py3-none-*|*-abi3-*) ;; *) continue ;; esac
            "$PY" -m zipfile -e "$whl" "$prefix/py" && found=1
        done
        [[ $found == 1 ]] || die "no wheel for $py_tag in $dir/wheels"
    fi
    local libs="$prefix/root/usr/lib/x86_64-linux-gnu"
    cat > "$prefix/env.sh" <<EOF
# Written by tools/peers/install.sh --from: the carried peers on PATH.
export PATH="$prefix/root/usr/bin:\$PATH"
export LD_LIBRARY_PATH="$libs:$libs/atlas:\${LD_LIBRARY_PATH:-}"
export PYTHONPATH="$prefix/py\${PYTHONPATH:+:\$PYTHONPATH}"
export IMFLOW_PEERS_SEX_SHARE="$prefix/root/usr/share/source-extractor"
EOF
    # shellcheck disable=SC1091
    . "$prefix/env.sh"
    print_versions
    echo "install.sh: source $prefix/env.sh"
}

case "${1:-}" in
    "") install_online ;;
    --download)
        [[ $# -ge 2 ]] || die "usage: --download DIR [--full] [--python 3.12,...]"
        dir=$2; shift 2; full=0; pys=3.12
        while [[ $# -gt 0 ]]; do
            case $1 in
                --full) full=1; shift ;;
                --python) pys=$2; shift 2 ;;
                *) die "unknown option $1" ;;
            esac
        done
        download "$dir" "$full" "$pys" ;;
    --from) [[ $# -ge 2 ]] || die "usage: --from DIR [PREFIX]"; install_from "$2" "${3:-}" ;;
    --versions) print_versions ;;
    -h|--help) sed -n '2,17p' "$0" ;;
    *) die "unknown option $1 (see --help)" ;;
esac
