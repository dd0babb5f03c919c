"""GLUE examples -> packed model inputs -> `tf.data` pipelines.

Tokenization and packing use the project's one tokenizer
(`official_electra.tokenization.WordpieceTokenizer`): `[CLS] A [SEP] (B [SEP])`
with BERT's truncation, padded to `max_seq_length`. Batches are then cut to
their longest real sequence, which changes no output (padding is masked out of
attention and the head reads `[CLS]`) but saves most of the compute on short
sentences.
"""

from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from official_electra.data import glue
from official_electra.finetuning import task_family
from official_electra.tokenization import wordpiece_tokenizer

# Texts tokenized per graph call while preprocessing.
_TOKENIZE_CHUNK_SIZE = 4096


def swap_pairs(examples: Sequence[glue.GlueExample]) -> list[glue.GlueExample]:
  """The examples followed by copies with text_a and text_b exchanged.

  The original trains MRPC and STS-B on both sentence orders.
  """
  swapped = [glue.GlueExample(example.example_id + "-swapped", example.text_b,
                              example.text_a, example.label)
             for example in examples]
  return list(examples) + swapped


def _tokenize(tokenizer, texts):
  ids, row_splits = tokenizer.tokenize_to_numpy(texts)
  return tf.RaggedTensor.from_row_splits(ids, row_splits)


def encode_examples(examples: Sequence[glue.GlueExample],
                    tokenizer: wordpiece_tokenizer.WordpieceTokenizer,
                    max_seq_length: int) -> dict[str, np.ndarray]:
  """Tokenizes and packs examples.

  Args:
    examples: single sentences or pairs (all of one kind).
    tokenizer: the project's tokenizer.
    max_seq_length: length of every packed sequence.

  Returns:
    `input_word_ids`, `input_mask`, `input_type_ids`: int32
    `[len(examples), max_seq_length]`.
  """
  chunks = []
  for start in range(0, len(examples), _TOKENIZE_CHUNK_SIZE):
    chunk = examples[start:start + _TOKENIZE_CHUNK_SIZE]
    segments = [_tokenize(tokenizer, [example.text_a for example in chunk])]
    if chunk[0].text_b is not None:
      segments.append(_tokenize(tokenizer, [example.text_b for example in chunk]))
    packed = tokenizer.pack_inputs(segments, max_seq_length)
    chunks.append({key: value.numpy() for key, value in packed.items()})
  if not chunks:
    return {key: np.zeros([0, max_seq_length], np.int32)
            for key in ("input_word_ids", "input_mask", "input_type_ids")}
  return {key: np.concatenate([chunk[key] for chunk in chunks])
          for key in chunks[0]}


def _trim_to_longest(features, labels=None):
  """Cuts a batch `[batch, max_seq_length]` to `[batch, longest real length]`."""
  longest = tf.reduce_max(tf.reduce_sum(features["input_mask"], axis=1))
  features = {key: value[:, :longest] for key, value in features.items()}
  return features if labels is None else (features, labels)


def _batched(elements, batch_size, drop_remainder):
  dataset = tf.data.Dataset.from_tensor_slices(elements)
  dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
  dataset = dataset.map(_trim_to_longest, num_parallel_calls=tf.data.AUTOTUNE)
  return dataset.prefetch(tf.data.AUTOTUNE)


def make_dataset(features: dict[str, np.ndarray], labels: Optional[np.ndarray],
                 batch_size: int) -> tf.data.Dataset:
  """Batches of `features` (with `labels` when given) in order, every example kept.

  Args:
    features: int32 arrays `[n, max_seq_length]` from `encode_examples`.
    labels: `[n]` class ids or scores, or None for prediction.
    batch_size: examples per batch.

  Returns:
    A `tf.data.Dataset` of `features` or `(features, labels)`.
  """
  elements = features if labels is None else (features, labels)
  return _batched(elements, batch_size, drop_remainder=False)


def epoch_order(num_examples: int, seed: int, epoch: int) -> np.ndarray:
  """The order `[num_examples]` in which epoch `epoch` of seed `seed` reads the
  training set: a fixed function of both, so a resumed run reads what an
  uninterrupted one would."""
  return np.random.default_rng([seed, epoch]).permutation(num_examples)


def make_training_dataset(features: dict[str, np.ndarray], labels,
                          batch_size: int, seed: int, epoch: int,
                          skip_batches: int = 0) -> tf.data.Dataset:
  """One epoch of training batches, shuffled by `epoch_order`.

  The last partial batch is dropped, so an epoch has
  `len(labels) // batch_size` batches. (The original pads the training set to
  a multiple of the batch with zero-loss examples and reads it as a repeated
  stream: `ceil(len / batch_size)` steps per epoch; README, "Where we
  differ".)

  Args:
    features: int32 arrays `[n, max_seq_length]` from `encode_examples`.
    labels: `[n]` class ids or scores, or a dict of `[n]` arrays (SQuAD's
      start and end positions and answerability).
    batch_size: examples per batch.
    seed: the run's seed.
    epoch: 0-based epoch number.
    skip_batches: batches of this epoch already trained on (resuming).

  Returns:
    A `tf.data.Dataset` of `(features, labels)`.
  """
  num_examples = len(next(iter(features.values())))
  order = epoch_order(num_examples, seed, epoch)[skip_batches * batch_size:]
  return _batched((task_family.rows(features, order),
                   task_family.rows(labels, order)),
                  batch_size, drop_remainder=True)
