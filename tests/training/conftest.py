"""The pretraining data shared by the training tests, built once."""

import pytest

from tests.training import tiny_pretraining


@pytest.fixture(scope="session")
def pretraining_data(tmp_path_factory):
  """`(data_dir, vocab_file, vocab_size)` of a 150 kB docstring corpus."""
  return tiny_pretraining.build_data(
      tmp_path_factory.mktemp("pretraining_data"))
