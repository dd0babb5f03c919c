"""A small docstring corpus, vocabulary and TFRecords, and a tiny run on them."""

import pathlib

import tensorflow as tf

from official_electra.modeling import encoder_config
from official_electra.training import pretraining_run
from tfrecords_tools import build_pretraining_dataset
from tfrecords_tools import build_vocab
from tfrecords_tools import sample_corpus

SEQ_LENGTH = 32
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def build_data(root):
  """Writes a 150 kB corpus, a vocabulary and 2 shards under `root`.

  Returns:
    `(data_dir, vocab_file, vocab_size)`.
  """
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


def train(model_dir, data, num_train_steps=6, stop_after_steps=None,
          strategy=None, dropout_rate=0.1, **kwargs):
  """A few steps of the tiny model (on one CPU device by default)."""
  data_dir, vocab_file, vocab_size = data
  settings = dict(
      train_batch_size=4, max_seq_length=SEQ_LENGTH,
      generator_hidden_fraction=0.5, learning_rate=1e-3, num_warmup_steps=2,
      save_checkpoints_steps=2, steps_per_execution=1, shuffle_buffer_size=50,
      seed=7, progress_bar=False)
  settings.update(kwargs)
  return pretraining_run.run_pretraining(
      str(model_dir), str(data_dir), str(vocab_file),
      tiny_encoder(vocab_size, dropout_rate),
      strategy or tf.distribute.OneDeviceStrategy("/cpu:0"),
      num_train_steps=num_train_steps, stop_after_steps=stop_after_steps,
      **settings)
