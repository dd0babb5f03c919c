"""The raw-text signatures compute only each request's longest sequence, and
give what the full-length model gives at the real positions."""

import numpy as np
import tensorflow as tf

from official_electra.finetuning import glue_family
from official_electra.finetuning import tasks
from official_electra.finetuning import trainer
from official_electra.modeling import encoder_config
from official_electra.serving import classifier_export
from official_electra.serving import request_length
from official_electra.tokenization import wordpiece_tokenizer

_MAX_SEQ_LENGTH = 24


def _packed(lengths, seq_length=8):
  mask = np.zeros((len(lengths), seq_length), np.int32)
  for row, length in enumerate(lengths):
    mask[row, :length] = 1
  ids = np.where(mask == 1, 7, 0).astype(np.int32)
  return {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask),
          "input_type_ids": tf.constant(np.zeros_like(ids))}


def test_cut_keeps_the_longest_real_sequence():
  cut = request_length.cut_to_longest(_packed([3, 5, 2]))
  assert {name: value.shape.as_list() for name, value in cut.items()} == {
      name: [3, 5] for name in cut}
  np.testing.assert_array_equal(cut["input_mask"].numpy().sum(axis=1),
                                [3, 5, 2])
  assert request_length.cut_to_longest(
      _packed([8, 1]))["input_mask"].shape.as_list() == [2, 8]
  assert request_length.cut_to_longest(
      _packed([]))["input_mask"].shape.as_list() == [0, 1]


def test_pad_positions_restores_the_packed_length_with_zeros():
  values = tf.reshape(tf.range(1, 13, dtype=tf.float32), [2, 3, 2])
  padded = request_length.pad_positions(values, 5).numpy()
  assert padded.shape == (2, 5, 2)
  np.testing.assert_array_equal(padded[:, :3], values.numpy())
  np.testing.assert_array_equal(padded[:, 3:], 0.0)
  assert request_length.pad_positions(
      tf.ones([2, 3]), 5).numpy().tolist() == [[1, 1, 1, 0, 0]] * 2


def test_classifier_text_signature_never_computes_past_the_longest(tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                              "the", "movie", "is", "good", "a", "dull",
                              "plot", "."]) + "\n", encoding="utf-8")
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(str(vocab),
                                                     lower_case=True)
  task = tasks.get_task("MRPC")
  config = encoder_config.EncoderConfig(
      vocab_size=tokenizer.vocab_size, embedding_size=16, hidden_size=32,
      num_layers=2, num_attention_heads=2, intermediate_size=64,
      max_position_embeddings=32)
  classifier = glue_family.build_classifier(
      config, task, trainer.FinetuneHyperparameters(
          max_seq_length=_MAX_SEQ_LENGTH))
  module = classifier_export.ClassifierServingModule(
      classifier, tokenizer,
      classifier_export.ServedTask.of_glue_task("MRPC"), _MAX_SEQ_LENGTH)
  first = tf.constant(["the movie is good .", "a dull plot"])
  second = tf.constant(["a dull plot .", "the plot"])
  packed = tokenizer.pack_inputs(
      [tokenizer.tokenize(first), tokenizer.tokenize(second)], _MAX_SEQ_LENGTH)
  longest = int(packed["input_mask"].numpy().sum(axis=1).max())
  assert longest == 12  # [CLS] + 5 + [SEP] + 4 + [SEP]; packed rows are 24.
  full = tf.nn.softmax(classifier(packed, training=False), axis=-1).numpy()
  served = module.serve_text(first, second)["probabilities"].numpy()
  np.testing.assert_allclose(served, full, rtol=1e-5, atol=1e-6)

  # Positions past the longest sequence poisoned: the full-length pass turns
  # to NaN (its padded keys are computed, then masked by addition), the text
  # signature does not see them.
  table = next(weight for weight in classifier.weights
               if "position_embeddings" in weight.name)
  poisoned = table.numpy()
  poisoned[longest:] = np.nan
  table.assign(poisoned)
  assert np.isnan(classifier(packed, training=False).numpy()).all()
  np.testing.assert_allclose(
      module.serve_text(first, second)["probabilities"].numpy(), full,
      rtol=1e-5, atol=1e-6)
