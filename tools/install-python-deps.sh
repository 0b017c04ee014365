#!/usr/bin/env bash
# Install what the Python package's build and tests need into the python3 on PATH (pip: nanobind,
# numpy, pytest, astropy and tqdm, and SEP 1.4.1 for the comparisons), when something is missing.
# Safe to repeat.
set -euo pipefail
if python3 -c "import nanobind, numpy, pytest, astropy, tqdm, sep; assert sep.__version__ == '1.4.1'" 2>/dev/null; then
  echo "install-python-deps: all present for $(command -v python3)"
  exit 0
fi
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "nanobind>=2.0" numpy pytest astropy tqdm "sep==1.4.1"
