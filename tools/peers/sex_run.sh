#!/usr/bin/env bash
# SExtractor runner: tools/peers/sex_run.sh --images DIR --out DIR [--background mesh|global]
# [--mesh 64] [--filter 3] [--nsigma 5] (all options: sex_run.py --help).
exec "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/sex_run.py" "$@"
