#!/usr/bin/env bash
# On a GPU host without a package registry: unpack the Debian packages carried in .devdeps
# (made by tools/gpu/make-deps.sh) into /opt/deps and configure + build imflow with
# CUDA into build-dev. Source it: `. tools/gpu/setup.sh` (it exports the library paths).
# TARGETS="a b" builds only those targets (default: all); SETUP_LOGS=DIR keeps cmake.log and
# build.log there (default: $OUT, else /tmp).
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
cmake -S . -B build-dev -G Ninja -DSYSTEM_PYTHON="$test_python" -DCMAKE_BUILD_TYPE=Release -DIMFLOW_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_CXX_FLAGS=-I/opt/deps/usr/include > "${SETUP_LOGS:-${OUT:-/tmp}}/cmake.log" 2>&1 || { tail -40 "${SETUP_LOGS:-${OUT:-/tmp}}/cmake.log"; exit 1; }
# shellcheck disable=SC2086 # TARGETS is a list
ninja -C build-dev -j 16 -k 0 ${TARGETS:-} > "${SETUP_LOGS:-${OUT:-/tmp}}/build.log" 2>&1 || { grep -B2 -A10 -m3 "error" "${SETUP_LOGS:-${OUT:-/tmp}}/build.log"; exit 1; }
set +euo pipefail
