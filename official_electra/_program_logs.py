"""Quiet logs for the `python -m` programs.

A program run without `--verbose` shows its own progress, metrics, warnings
and result, not TensorFlow's chatter: the C++ INFO, WARNING and ERROR lines
printed at import and start (CPU features, oneDNN, CUDA probing on a machine
without a GPU, XLA compilation) and the Python INFO and WARNING lines of the
`tensorflow` logger (deprecations, checkpoint sharding, state-file edits,
partial restores) and their INFO and WARNING records through absl's logger.
`--verbose` shows everything; an explicit
`TF_CPP_MIN_LOG_LEVEL` in the environment is kept (and then applies to XLA's
lines too). Importing the package as a library changes nothing.

This runs when the package is imported, before TensorFlow is: the C++ level
is read when TensorFlow loads.
"""

import ctypes
import importlib.util
import logging
import os
import sys

_VERBOSE_FLAGS = ("--verbose", "--verbose=true", "--verbose=True")
# Packages whose INFO and WARNING records through absl's logger are chatter
# (TensorFlow's checkpoint code logs "Sharding callback duration" so).
_CHATTY_PACKAGES = ("tensorflow", "tf_keras", "keras", "tensorflow_text",
                    "official", "orbit")
# XLA logs through Abseil, which ignores TF_CPP_MIN_LOG_LEVEL; TensorFlow
# 2.20's framework library exports Abseil's setter (this LTS's mangled name).
_FRAMEWORK_LIBRARY = "libtensorflow_framework.so.2"
_ABSL_SET_MIN_LOG_LEVEL = (
    "_ZN4absl12lts_2025012714SetMinLogLevelENS0_18LogSeverityAtLeastE")


def running_as_program():
  """True while `python -m <package>.<module>` is importing its package
  (Python sets `sys.argv[0]` to "-m" until the module is found)."""
  return bool(sys.argv) and sys.argv[0] == "-m"


def _set_absl_min_log_level(level):
  """Abseil's C++ minimum severity (0 INFO .. 3 FATAL); no-op if unavailable."""
  try:
    spec = importlib.util.find_spec("tensorflow")
  except (ImportError, ValueError):
    return
  for directory in (spec.submodule_search_locations or []) if spec else []:
    path = os.path.join(directory, _FRAMEWORK_LIBRARY)
    if not os.path.exists(path):
      continue
    try:
      setter = getattr(ctypes.CDLL(path), _ABSL_SET_MIN_LOG_LEVEL)
    except (OSError, AttributeError):
      return
    setter.argtypes = [ctypes.c_int]
    setter.restype = None
    setter(level)
    return


def _package_directories(names):
  directories = []
  for name in names:
    try:
      spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
      continue
    if spec is not None:
      directories += [os.path.join(path, "") for path in
                      spec.submodule_search_locations or []]
  return tuple(directories)


class _DependencyChatterFilter(logging.Filter):
  """Drops records below ERROR logged from inside the given directories."""

  def __init__(self, directories):
    super().__init__()
    self._directories = directories

  def filter(self, record):
    return (record.levelno >= logging.ERROR
            or not record.pathname.startswith(self._directories))


def quiet_tensorflow_for_programs():
  if not running_as_program() or any(
      argument in _VERBOSE_FLAGS for argument in sys.argv[1:]):
    return
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  try:
    level = min(3, max(0, int(os.environ["TF_CPP_MIN_LOG_LEVEL"])))
  except ValueError:
    level = 3
  _set_absl_min_log_level(level)
  logging.getLogger("tensorflow").setLevel(logging.ERROR)
  directories = _package_directories(_CHATTY_PACKAGES)
  if directories:
    from absl import logging as absl_logging  # pylint: disable=g-import-not-at-top
    absl_logging.get_absl_logger().addFilter(
        _DependencyChatterFilter(directories))
