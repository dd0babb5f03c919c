"""Tests for ClassificationHead."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import classification_head


def _sequence_output(batch=3, seq_len=5, hidden=8, seed=0):
  return tf.random.stateless_normal([batch, seq_len, hidden], seed=[seed, 1])


def test_reads_only_the_first_token():
  head = classification_head.ClassificationHead(num_outputs=3, dropout_rate=0.1)
  sequence_output = _sequence_output()
  logits = head(sequence_output, training=False)
  assert logits.shape == (3, 3) and logits.dtype == tf.float32
  changed_tail = tf.concat(
      [sequence_output[:, :1], _sequence_output(seed=7)[:, 1:]], axis=1)
  np.testing.assert_allclose(head(changed_tail, training=False), logits)
  expected = sequence_output[:, 0] @ head.dense.kernel + head.dense.bias
  np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)


def test_dropout_only_in_training():
  head = classification_head.ClassificationHead(num_outputs=2, dropout_rate=0.5)
  sequence_output = _sequence_output(batch=16, hidden=64)
  inference = head(sequence_output, training=False)
  np.testing.assert_allclose(head(sequence_output, training=False), inference)
  assert not np.allclose(head(sequence_output, training=True), inference)


def test_tf_function_variable_length_and_regression():
  head = classification_head.ClassificationHead(num_outputs=1)
  call = tf.function(lambda x: head(x, training=False), reduce_retracing=True)
  for seq_len in (4, 9):
    assert call(_sequence_output(seq_len=seq_len)).shape == (3, 1)


def test_get_config_round_trip():
  head = classification_head.ClassificationHead(num_outputs=3, dropout_rate=0.2,
                                                name="head")
  rebuilt = classification_head.ClassificationHead.from_config(head.get_config())
  assert rebuilt.get_config() == head.get_config()
  assert (rebuilt.num_outputs, rebuilt.dropout_rate) == (3, 0.2)


def test_mixed_precision_returns_float32():
  tf_keras.mixed_precision.set_global_policy("mixed_float16")
  try:
    head = classification_head.ClassificationHead(num_outputs=2)
    logits = head(tf.cast(_sequence_output(), tf.float16), training=False)
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")
  assert logits.dtype == tf.float32
  assert head.dense.kernel.dtype == tf.float32


def test_savedmodel_round_trip(tmp_path):
  inputs = tf_keras.Input(shape=(None, 8))
  model = tf_keras.Model(
      inputs, classification_head.ClassificationHead(num_outputs=2)(inputs))
  sequence_output = _sequence_output()
  model.save(str(tmp_path / "head"))
  reloaded = tf_keras.models.load_model(str(tmp_path / "head"))
  np.testing.assert_allclose(reloaded(sequence_output), model(sequence_output),
                             rtol=1e-6)


def test_invalid_arguments():
  with pytest.raises(ValueError, match="num_outputs"):
    classification_head.ClassificationHead(num_outputs=0)
  with pytest.raises(ValueError, match="dropout_rate"):
    classification_head.ClassificationHead(num_outputs=2, dropout_rate=1.0)
