"""Programs run TensorFlow with Keras 2 as `tf.keras` and never import
Keras 3; importing the package as a library changes nothing
(official_electra/_program_keras.py)."""

import os
import subprocess
import sys

import pytest

from tests.training import tiny_pretraining


def _imported_modules(arguments, **environment):
  """The modules a Python process imported (`-X importtime`'s report)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  env.pop("TF_USE_LEGACY_KERAS", None)
  env.update(environment)
  completed = subprocess.run(
      [sys.executable, "-X", "importtime"] + arguments, capture_output=True,
      text=True, check=False, timeout=300, cwd=tiny_pretraining.REPO_ROOT,
      env=env)
  modules = {line.rsplit("|", 1)[1].strip()
             for line in completed.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
  return completed, modules


@pytest.mark.slow
def test_a_program_loads_tensorflow_without_keras_3():
  completed, modules = _imported_modules(
      ["-m", "official_electra.train", "--gin_file=gin/no_such.gin"])
  # It got as far as its own error line, with TensorFlow and tf_keras loaded.
  assert "no such gin file" in completed.stderr
  assert {"tensorflow", "tf_keras"} <= modules
  assert "keras" not in modules and "keras.src" not in modules


@pytest.mark.slow
def test_the_library_and_an_explicit_setting_are_left_alone():
  program = ("import official_electra, tensorflow as tf, tf_keras\n"
             "assert tf.keras.layers.Dense is not tf_keras.layers.Dense\n")
  completed, modules = _imported_modules(["-c", program])
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "keras.src" in modules
  completed, modules = _imported_modules(
      ["-m", "official_electra.train", "--gin_file=gin/no_such.gin"],
      TF_USE_LEGACY_KERAS="0")
  assert "no such gin file" in completed.stderr
  assert "keras.src" in modules
