#!/usr/bin/env bash
# The README's test command: installs runtime and test dependencies into .venv
# and runs the whole test suite. Extra arguments go to pytest.
#
# The suite runs on ELECTRA_TEST_WORKERS pytest-xdist processes (default 2),
# one test file per process at a time (--dist loadfile, so a module's fixtures
# are built once). Many tests spend their time waiting on the command-line
# programs they start, so two processes fill CI's two cores: 1048 s -> 718 s
# measured on 2 cores. ELECTRA_TEST_WORKERS=0 runs everything in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
ensure_venv requirements.txt requirements-test.txt
# On Python 3.12 and 3.13 the test-only torch==2.13.0 is PyPI's CUDA build,
# which pulls in triton (a GPU kernel compiler the CPU tests never use); with
# TensorFlow loaded, importing transformers then crashes the process
# (segmentation fault, measured on 3.12.1). Without triton torch runs on the
# CPU as the 3.11 CPU build does.
if .venv/bin/python -m pip show triton > /dev/null 2>&1; then
  echo "removing triton from .venv (unused on the CPU; crashes beside TensorFlow)" >&2
  .venv/bin/python -m pip uninstall --yes --quiet triton
fi
set +e
.venv/bin/python -m pytest -n "${ELECTRA_TEST_WORKERS:-2}" --dist loadfile "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests (exit code 5): nothing to run is not a failure here."
  exit 0
fi
exit "$rc"
