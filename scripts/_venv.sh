# Shared by the README's two commands: create .venv with a Python the pinned
# stack supports and install the pinned requirements files given as
# arguments; says which Python it uses.
#
# ELECTRA_PYTHONS (set by the caller) lists the accepted versions, preferred
# first; default "3.11 3.12 3.13" (numpy 2.4 needs 3.11 or newer; TensorFlow
# 2.20 has no wheels past 3.13). Both README commands accept all three; on
# 3.12 and 3.13 the test command removes the test-only torch's triton (see
# scripts/run_tests.sh).
ensure_venv() {
  local python_bin candidate version
  local accepted="${ELECTRA_PYTHONS:-3.11 3.12 3.13}"
  python_bin=""
  for candidate in $(for version in $accepted; do echo "python$version"; done) python3; do
    if command -v "$candidate" > /dev/null; then
      # A command that is there but does not run (a pyenv shim of a version
      # not selected) is skipped, not fatal.
      version=$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2> /dev/null) || continue
      if [[ " $accepted " == *" $version "* ]]; then
        python_bin=$(command -v "$candidate")
        break
      fi
    fi
  done
  if [ -z "$python_bin" ]; then
    echo "error: this command needs Python ${accepted// / or } (found $(python3 --version 2>&1 || echo none)); install one of them and rerun." >&2
    exit 1
  fi
  if [ -x .venv/bin/python ]; then
    version=$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    if [[ " $accepted " != *" $version "* ]]; then
      echo "error: .venv has Python $version; this command needs ${accepted// / or }: remove .venv and rerun." >&2
      exit 1
    fi
  else
    "$python_bin" -m venv .venv
  fi
  echo "using $(.venv/bin/python --version 2>&1) in .venv" >&2
  local args=()
  for f in "$@"; do args+=(-r "$f"); done
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "${args[@]}"
}
