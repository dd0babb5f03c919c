"""Test-wide settings: quiet TensorFlow, Keras' process-wide switches reset
after each test, and the optional ../shared data."""

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"


def missing_shared_data(message):
  """Skips the test on a user's clone; in CI (`CI=true`) it is an error.

  CI has `../shared`, so there a missing file means a broken checkout, which
  would otherwise pass as a row of skipped tests.
  """
  if os.environ.get("CI", "").lower() == "true":
    pytest.fail(f"{message}; CI=true, where ../shared must be present",
                pytrace=False)
  pytest.skip(message)


@pytest.fixture(scope="session")
def shared_data_dir():
  """`../shared/data` beside the clone; skips the test when it is absent
  (fails it under `CI=true`)."""
  data_dir = SHARED_DIR / "data"
  if not data_dir.is_dir():
    missing_shared_data(
        f"{data_dir} is absent (a user's clone has no ../shared); "
        "this test needs the GLUE files or the BERT vocabulary there")
  return data_dir


@pytest.fixture(scope="session")
def bert_vocab_file(shared_data_dir):
  path = shared_data_dir / "vocab" / "bert_base_uncased_vocab.txt"
  if not path.is_file():
    missing_shared_data(f"{path} is absent")
  return path


@pytest.fixture(autouse=True)
def _restore_keras_switches():
  """Puts back Keras' TF-random-generator switch and global dtype policy.

  Our trainers turn the generator on for the whole process (dropout then
  draws from checkpointed generators), so a test that runs one in-process
  would otherwise change how every later test's dropout draws. Nothing is
  imported here: a test that never loads Keras is left alone.
  """
  keras = sys.modules.get("tf_keras")
  before = ((keras.backend.experimental.is_tf_random_generator_enabled(),
             keras.mixed_precision.global_policy().name)
            if keras else (False, "float32"))
  yield
  keras = sys.modules.get("tf_keras")
  if keras is None:
    return
  generator_enabled, policy = before
  switches = keras.backend.experimental
  if switches.is_tf_random_generator_enabled() != generator_enabled:
    (switches.enable_tf_random_generator if generator_enabled
     else switches.disable_tf_random_generator)()
  if keras.mixed_precision.global_policy().name != policy:
    keras.mixed_precision.set_global_policy(policy)
