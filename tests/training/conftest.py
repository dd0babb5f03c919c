"""A small docstring corpus, its vocabulary and TFRecords, built once."""

import pytest

from official_electra.modeling import encoder_config
from tfrecords_tools import build_pretraining_dataset
from tfrecords_tools import build_vocab
from tfrecords_tools import sample_corpus

SEQ_LENGTH = 32


@pytest.fixture(scope="session")
def pretraining_data(tmp_path_factory):
  """`(data_dir, vocab_file, vocab_size)` of a 150 kB docstring corpus."""
  root = tmp_path_factory.mktemp("pretraining_data")
  corpus = root / "corpus.txt"
  sample_corpus.write_stdlib_corpus(str(corpus), 150_000)
  vocab_file = root / "vocab.txt"
  tokens = build_vocab.build_vocab(str(corpus), str(vocab_file), 600, True)
  build_pretraining_dataset.build_pretraining_dataset(
      str(corpus), str(vocab_file), str(root / "data"),
      max_seq_length=SEQ_LENGTH, num_shards=2)
  return root / "data", vocab_file, len(tokens)


def tiny_encoder(vocab_size, dropout_rate=0.1):
  return encoder_config.EncoderConfig(
      vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_layers=2,
      num_attention_heads=2, intermediate_size=64,
      max_position_embeddings=SEQ_LENGTH, dropout_rate=dropout_rate,
      attention_dropout_rate=dropout_rate)
