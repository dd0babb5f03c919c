# Shared by the README's two commands: create .venv with a Python the pinned
# stack supports (3.11 to 3.13: numpy 2.4 needs 3.11 or newer; TensorFlow
# 2.20 has no wheels past 3.13) and install the pinned requirements files
# given as arguments. Prefers python3.11 (what CI runs), then 3.12, 3.13, then
# python3; says which it uses.
ensure_venv() {
  local python_bin candidate
  python_bin=""
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" > /dev/null && "$candidate" -c \
        'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))'; then
      python_bin=$(command -v "$candidate")
      break
    fi
  done
  if [ -z "$python_bin" ]; then
    echo "error: Python 3.11, 3.12 or 3.13 is required (found $(python3 --version 2>&1 || echo none)); install one of them and rerun." >&2
    exit 1
  fi
  if [ ! -x .venv/bin/python ]; then
    "$python_bin" -m venv .venv
  fi
  echo "using $(.venv/bin/python --version 2>&1) in .venv" >&2
  local args=()
  for f in "$@"; do args+=(-r "$f"); done
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "${args[@]}"
}
