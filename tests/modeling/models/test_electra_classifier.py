"""Tests for ElectraClassifier on a tiny encoder."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.modeling import encoder_config
from official_electra.modeling.models import electra_classifier

_TINY = encoder_config.EncoderConfig(
    vocab_size=40, embedding_size=16, hidden_size=32, num_layers=2,
    num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)


def _inputs(batch=4, seq_len=6, seed=0):
  word_ids = tf.random.stateless_uniform([batch, seq_len], seed=[seed, 2],
                                         minval=1, maxval=40, dtype=tf.int32)
  return {"input_word_ids": word_ids,
          "input_mask": tf.ones([batch, seq_len], tf.int32),
          "input_type_ids": tf.zeros([batch, seq_len], tf.int32)}


def _classifier(num_outputs=3):
  return electra_classifier.ElectraClassifier(
      encoder_config.build_encoder(_TINY), num_outputs=num_outputs)


def test_call_eager_and_tf_function_with_variable_length():
  model = _classifier()
  eager = model(_inputs(), training=False)
  assert eager.shape == (4, 3) and eager.dtype == tf.float32
  call = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
  np.testing.assert_allclose(call(_inputs()), eager, rtol=1e-5, atol=1e-6)
  assert call(_inputs(batch=2, seq_len=11)).shape == (2, 3)


def test_fit_reduces_loss_on_a_learnable_rule():
  # Seeded: initialisation and dropout are random, and "halves in 30 steps"
  # is a training outcome, not a bound that holds for every draw.
  tf_keras.utils.set_random_seed(0)
  model = _classifier(num_outputs=2)
  inputs = _inputs(batch=32, seq_len=6, seed=3)
  labels = tf.cast(inputs["input_word_ids"][:, 0] > 20, tf.int32)
  model.compile(
      optimizer=tf_keras.optimizers.Adam(3e-3),
      loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  history = model.fit(inputs, labels, batch_size=32, epochs=30, verbose=0)
  assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]


def test_get_config_round_trip():
  model = _classifier()
  model(_inputs())
  rebuilt = electra_classifier.ElectraClassifier.from_config(model.get_config())
  rebuilt(_inputs())
  assert rebuilt.get_config() == model.get_config()
  rebuilt.set_weights(model.get_weights())
  np.testing.assert_allclose(rebuilt(_inputs(), training=False),
                             model(_inputs(), training=False), rtol=1e-5)


def test_mixed_precision_logits_are_float32():
  tf_keras.mixed_precision.set_global_policy("mixed_float16")
  try:
    model = _classifier()
    logits = model(_inputs(), training=False)
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")
  assert logits.dtype == tf.float32


def test_savedmodel_round_trip(tmp_path):
  model = _classifier(num_outputs=1)
  expected = model(_inputs(), training=False)
  tf.saved_model.save(model, str(tmp_path / "classifier"))
  reloaded = tf.saved_model.load(str(tmp_path / "classifier"))
  np.testing.assert_allclose(reloaded(_inputs(), training=False), expected,
                             rtol=1e-5, atol=1e-6)


def test_train_step_clips_the_global_gradient_norm():
  model = electra_classifier.ElectraClassifier(
      encoder_config.build_encoder(_TINY), num_outputs=1,
      gradient_clip_norm=1e-3)
  # Only dense gradients: embedding gradients are IndexedSlices whose repeated
  # rows make the applied change differ from the clipped norm of their values.
  model.encoder.trainable = False
  model.compile(optimizer=tf_keras.optimizers.SGD(1.0),
                loss=tf_keras.losses.MeanSquaredError())
  inputs = _inputs(batch=8)
  model(inputs)
  before = [variable.numpy() for variable in model.trainable_variables]
  model.fit(inputs, tf.fill([8], 100.0), batch_size=8, epochs=1, verbose=0)
  squared_change = sum(
      np.sum((variable.numpy() - old) ** 2)
      for variable, old in zip(model.trainable_variables, before))
  assert np.sqrt(squared_change) == pytest.approx(1e-3, rel=1e-3)
