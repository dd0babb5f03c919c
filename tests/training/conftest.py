"""The pretraining data shared by the training tests, built once."""

import pytest

from official_electra.training import architecture
from tests.training import tiny_pretraining


@pytest.fixture(scope="session")
def pretraining_data(tmp_path_factory):
  """`(data_dir, vocab_file, vocab_size)` of a 150 kB docstring corpus."""
  return tiny_pretraining.build_data(
      tmp_path_factory.mktemp("pretraining_data"))


@pytest.fixture
def built_pretrainers(monkeypatch):
  """The `ElectraPretrainer`s the runs of a test build, in order."""
  built = []
  build_pretrainer = architecture.build_pretrainer

  def recording_build_pretrainer(*args, **kwargs):
    built.append(build_pretrainer(*args, **kwargs))
    return built[-1]

  monkeypatch.setattr(architecture, "build_pretrainer",
                      recording_build_pretrainer)
  return built
