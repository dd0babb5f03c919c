#!/usr/bin/env bash
# The README's first command: installs the pinned requirements into .venv, then
# builds a vocabulary and TFRecords from this machine's Python docstrings,
# pretrains gin/tiny.gin for a few minutes and exports the discriminator for
# TF Serving (python -m official_electra.quickstart). Extra arguments go to it,
# e.g. --work_dir=runs/quickstart --train_steps=800.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
ensure_venv requirements.txt
exec .venv/bin/python -m official_electra.quickstart "$@"
