"""A docstring corpus, its learned vocabulary and a finished dataset, built once
for the reliability tests (no ../shared data needed)."""

import dataclasses
import pathlib

import pytest

from tfrecords_tools import build_pretraining_dataset
from tfrecords_tools import build_vocab
from tfrecords_tools import sample_corpus

# gin/tiny.gin's run_pretraining.max_seq_length, so the train CLI reads it.
SEQ_LENGTH = 64


@dataclasses.dataclass(frozen=True)
class Corpus:
  """`small` (100 kB) and `large` (500 kB) corpora and a vocabulary of `small`."""
  small: pathlib.Path
  large: pathlib.Path
  vocab_file: pathlib.Path
  vocab_size: int


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
  root = tmp_path_factory.mktemp("reliability_corpus")
  small, large = root / "small.txt", root / "large.txt"
  sample_corpus.write_stdlib_corpus(str(small), 100_000)
  sample_corpus.write_stdlib_corpus(str(large), 500_000)
  vocab_file = root / "vocab.txt"
  tokens = build_vocab.build_vocab(str(small), str(vocab_file), 400, True)
  return Corpus(small, large, vocab_file, len(tokens))


@pytest.fixture(scope="session")
def dataset_dir(corpus, tmp_path_factory):
  """A finished dataset of the small corpus: 2 shards of SEQ_LENGTH records."""
  output_dir = tmp_path_factory.mktemp("reliability_dataset") / "data"
  build_pretraining_dataset.build_pretraining_dataset(
      str(corpus.small), str(corpus.vocab_file), str(output_dir),
      max_seq_length=SEQ_LENGTH, num_shards=2, num_workers=0, seed=0)
  return output_dir
