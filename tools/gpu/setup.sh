#!/usr/bin/env bash
# On a GPU host without a package registry: unpack the Debian packages carried in .devdeps
# (made by tools/gpu/make-deps.sh) into /opt/deps and configure + build imflow with
# CUDA into build-dev. Source it: `. tools/gpu/setup.sh` (it exports the library paths).
# TARGETS="a b" builds only those targets (default: all); BUILD_TYPE=RelWithDebInfo for symbols (default Release); SETUP_LOGS=DIR keeps cmake.log and
# build.log there (default: $OUT, else /tmp). IMFLOW_PYTHON=ON also builds the Python module for
# the test Python, after installing nanobind and SEP from the wheels in .devdeps/python.
set -euo pipefail
mkdir -p /opt/deps
for deb in .devdeps/*.deb; do dpkg -x "$deb" /opt/deps; done
export CMAKE_PREFIX_PATH=/opt/deps/usr
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:/opt/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:${LD_LIBRARY_PATH:-}
export PKG_CONFIG_PATH=/opt/deps/usr/lib/x86_64-linux-gnu/pkgconfig:/opt/deps/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=/opt/deps
# The tests' Python (tests/CMakeLists.txt SYSTEM_PYTHON) must have NumPy: Debian's /usr/bin/python3
# on a Debian host; on others often only the python3 on PATH has it.
test_python=/usr/bin/python3
for candidate in /usr/bin/python3 "$(command -v python3 || true)"; do
  if [ -x "$candidate" ] && "$candidate" -c "import numpy" 2>/dev/null; then test_python=$candidate; break; fi
done
python_options=()
if [ "${IMFLOW_PYTHON:-OFF}" = ON ]; then
  "$test_python" -m pip install -q --no-index --find-links .devdeps/python nanobind "sep==1.4.1" pytest 2>&1 | tail -3 || true
  python_options=(-DIMFLOW_PYTHON=ON -DPython_EXECUTABLE="$test_python")
  # The carried zlib1g-dev's libz.so points at Debian's /lib path: link the host's shared zlib
  # (the module is a shared object; the static libz.a is not position-independent).
  host_zlib=$(ls /usr/lib/x86_64-linux-gnu/libz.so.1 /lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
  [ -n "$host_zlib" ] && python_options+=(-DZLIB_LIBRARY="$host_zlib" -DZLIB_LIBRARY_RELEASE="$host_zlib")
fi
# The Python module shares its process with libraries linked to the shared libstdc++. A compiler
# whose library directory holds only libstdc++.a (no libstdc++.so; some GPU hosts) links a second,
# static copy into the module, whose streams then crash: name the shared library instead.
stdcxx_options=()
if [ ! -e "$("${CXX:-c++}" -print-file-name=libstdc++.so)" ]; then
  shared_stdcxx=$(ls /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /lib/x86_64-linux-gnu/libstdc++.so.6 2>/dev/null | head -1)
  [ -n "$shared_stdcxx" ] && stdcxx_options=(-DCMAKE_CXX_STANDARD_LIBRARIES="$shared_stdcxx")
fi
cmake -S . -B build-dev -G Ninja "${stdcxx_options[@]}" -DSYSTEM_PYTHON="$test_python" "${python_options[@]}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" -DIMFLOW_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_CXX_FLAGS=-I/opt/deps/usr/include > "${SETUP_LOGS:-${OUT:-/tmp}}/cmake.log" 2>&1 || { tail -40 "${SETUP_LOGS:-${OUT:-/tmp}}/cmake.log"; exit 1; }
# shellcheck disable=SC2086 # TARGETS is a list
ninja -C build-dev -j 16 -k 0 ${TARGETS:-} > "${SETUP_LOGS:-${OUT:-/tmp}}/build.log" 2>&1 || { grep -B2 -A10 -m3 "error" "${SETUP_LOGS:-${OUT:-/tmp}}/build.log"; exit 1; }
set +euo pipefail
