"""Test-wide settings: quiet TensorFlow, and the optional ../shared data."""

import os
import pathlib

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
