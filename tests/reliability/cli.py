"""Runs the project's command-line programs as users do, and checks the error
contract: a non-zero exit, stderr ending in one `error: ...` line that names the
file and the fix, and no traceback unless `--verbose`."""

import concurrent.futures
import os
import pathlib
import subprocess
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
# Programs start in parallel (TensorFlow's import dominates and mostly waits).
_PARALLEL_PROGRAMS = 3
_ENVIRONMENT = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                    CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1")


def command(module, *args):
  """The argv of `python -m module args...` with this project's interpreter."""
  return [sys.executable, "-m", module, *[str(arg) for arg in args]]


def run(module, *args, timeout=300):
  """Runs `python -m module args...` in the repository root; waits."""
  return subprocess.run(command(module, *args), cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=timeout,
                        env=_ENVIRONMENT)


def start(module, *args):
  """Starts `python -m module args...` in the repository root (stderr piped)."""
  return subprocess.Popen(command(module, *args), cwd=REPO_ROOT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=_ENVIRONMENT)


def run_all(runs):
  """Runs `{name: (module, *args)}` a few at a time; `{name: Future}`."""
  executor = concurrent.futures.ThreadPoolExecutor(_PARALLEL_PROGRAMS)
  futures = {name: executor.submit(run, *argv) for name, argv in runs.items()}
  executor.shutdown(wait=False)
  return futures


def error_line(completed):
  """Checks the contract and returns the `error: ...` line.

  Asserts a non-zero exit, that stderr's last non-empty line starts with
  `error: ` and holds no line break inside, and that there is no traceback.
  """
  lines = [line for line in completed.stderr.splitlines() if line.strip()]
  assert completed.returncode != 0, completed.stderr[-3000:]
  assert lines, "no message on stderr"
  assert lines[-1].startswith("error: "), completed.stderr[-3000:]
  assert "Traceback" not in completed.stderr, completed.stderr[-3000:]
  return lines[-1]


def assert_error(completed, *fragments):
  """The contract holds and the error line contains every fragment."""
  line = error_line(completed)
  for fragment in fragments:
    assert str(fragment) in line, f"{fragment!r} not in {line!r}"
  return line
