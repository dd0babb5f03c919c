# Shared by the README's two commands: create .venv with Python 3.11 and
# install the pinned requirements files given as arguments.
ensure_venv() {
  local python_bin
  python_bin=$(command -v python3.11 || command -v python3)
  if ! "$python_bin" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "error: Python 3.11 is required (found $("$python_bin" --version 2>&1)); install python3.11 and rerun." >&2
    exit 1
  fi
  if [ ! -x .venv/bin/python ]; then
    "$python_bin" -m venv .venv
  fi
  local args=()
  for f in "$@"; do args+=(-r "$f"); done
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "${args[@]}"
}
