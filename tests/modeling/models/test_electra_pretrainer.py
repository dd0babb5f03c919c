"""ElectraPretrainer: every objective trains, gradients and labels are right."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.modeling.models import electra_pretrainer
from official_electra.optimization import optimizer_factory
from tests.modeling import tiny


def compiled(objective, **kwargs):
  pretrainer = tiny.pretrainer(objective, **kwargs)
  pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
      "adamw", peak_learning_rate=1e-3, num_train_steps=200,
      num_warmup_steps=20, weight_decay_rate=0.0))
  return pretrainer


def mean_loss(pretrainer, inputs):
  return pretrainer.evaluate(tf.data.Dataset.from_tensors(inputs).repeat(4),
                             verbose=0, return_dict=True)["loss"]


@pytest.mark.parametrize("objective", electra_pretrainer.OBJECTIVES)
def test_tiny_model_overfits_one_batch_in_200_steps(objective):
  tf_keras.utils.set_random_seed(0)
  # A full-size generator (as Small++) learns fast enough for ELECTRA 15%,
  # whose discriminator only sees negatives once the generator is right.
  pretrainer = compiled(objective, generator_fraction=1.0)
  inputs = tiny.batch()
  initial = mean_loss(pretrainer, inputs)
  history = pretrainer.fit(tf.data.Dataset.from_tensors(inputs).repeat(),
                           steps_per_epoch=200, epochs=1, verbose=0)
  final = mean_loss(pretrainer, inputs)
  assert np.isfinite(history.history["loss"]).all()
  assert final < 0.5 * initial, (objective, initial, final)


def forward(pretrainer, inputs, seed=(5, 6)):
  seeds = tf.constant([[seed[0], seed[1], 3], [4, 5, 6]], tf.int64)
  return pretrainer._forward(inputs, seeds, training=False)  # pylint: disable=protected-access


def test_discriminator_loss_sends_no_gradient_into_the_generator():
  pretrainer = tiny.pretrainer("electra")
  inputs = tiny.batch()
  pretrainer(inputs)
  shared = {id(v) for v in
            pretrainer.discriminator_network.embedding_layer.trainable_variables}
  generator_only = [
      v for v in (pretrainer.generator_network.trainable_variables +
                  pretrainer.generator_head.trainable_variables)
      if id(v) not in shared]
  assert len(generator_only) > 10
  with tf.GradientTape(persistent=True) as tape:
    outputs = forward(pretrainer, inputs)
    losses = pretrainer.compute_pretraining_losses(inputs, outputs)
  disc_gradients = tape.gradient(losses["discriminator"][0], generator_only)
  assert all(g is None or not np.any(g.numpy()) for g in disc_gradients)
  # The checks have power: the generator loss does reach those variables, and
  # the discriminator loss does reach the shared embeddings.
  gen_gradients = tape.gradient(losses["generator"][0], generator_only)
  assert sum(g is not None and np.any(g.numpy()) for g in gen_gradients) > 10
  table = pretrainer.discriminator_network.get_embedding_table()
  assert np.any(tf.convert_to_tensor(
      tape.gradient(losses["discriminator"][0], table)).numpy())


class FixedSampler(tf_keras.layers.Layer):
  """Returns given ids instead of sampling (to pin the labelling rule)."""

  def __init__(self, sampled_ids):
    super().__init__()
    self.sampled_ids = sampled_ids

  def call(self, logits, seed):
    del logits, seed
    return self.sampled_ids


def test_labels_mark_exactly_the_changed_tokens():
  pretrainer = tiny.pretrainer("electra")
  inputs = tiny.batch()
  masking = forward(pretrainer, inputs)
  weights = masking["masked_weights"].numpy()
  original_ids = masking["masked_ids"]

  # A sample equal to the original counts as original.
  pretrainer.sampler = FixedSampler(tf.cast(original_ids, tf.int32))
  outputs = forward(pretrainer, inputs)
  np.testing.assert_array_equal(outputs["corrupted_ids"],
                                inputs["input_word_ids"])
  assert not outputs["replaced_token_labels"].numpy().any()

  # Different samples are labelled 1 exactly at the real masked slots.
  different = tf.cast((original_ids + 1) % tiny.TINY.vocab_size, tf.int32)
  pretrainer.sampler = FixedSampler(different)
  outputs = forward(pretrainer, inputs)
  labels = outputs["replaced_token_labels"].numpy()
  positions = masking["masked_positions"].numpy()
  expected = np.zeros_like(labels)
  for row in range(labels.shape[0]):
    expected[row, positions[row][weights[row] > 0]] = 1
  np.testing.assert_array_equal(labels, expected)
  assert labels.sum() == weights.sum()


def test_electra_15_weights_only_masked_slots():
  pretrainer = tiny.pretrainer("electra_15")
  outputs = forward(pretrainer, tiny.batch())
  np.testing.assert_array_equal(
      outputs["discriminator_weights"].numpy().sum(axis=1),
      outputs["masked_weights"].numpy().sum(axis=1))


def test_uniform_generator_has_no_generator_network():
  pretrainer = compiled("electra", uniform_generator=True)
  history = pretrainer.fit(tf.data.Dataset.from_tensors(tiny.batch()).repeat(2),
                           verbose=0)
  assert "masked_lm_loss" not in history.history
  assert np.isfinite(history.history["disc_loss"]).all()


def test_metrics_are_the_originals():
  pretrainer = compiled("electra")
  logs = pretrainer.evaluate(tf.data.Dataset.from_tensors(tiny.batch()),
                             verbose=0, return_dict=True)
  assert set(logs) == {"loss", "masked_lm_loss", "masked_lm_accuracy",
                       "sampled_masked_lm_accuracy", "disc_loss",
                       "disc_accuracy", "disc_precision", "disc_recall",
                       "disc_auc"}
  np.testing.assert_allclose(
      logs["loss"], logs["masked_lm_loss"] + 50.0 * logs["disc_loss"],
      rtol=1e-4)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_one_step_in_mixed_precision_is_finite(policy):
  tf_keras.mixed_precision.set_global_policy(policy)
  try:
    pretrainer = compiled("electra")
    history = pretrainer.fit(
        tf.data.Dataset.from_tensors(tiny.batch()).repeat(2), verbose=0)
    if policy == "mixed_float16":
      assert isinstance(pretrainer.optimizer,
                        tf_keras.mixed_precision.LossScaleOptimizer)
    assert np.isfinite(history.history["loss"]).all()
    assert pretrainer.discriminator_network.transformer_layers[
        0].attention_qkv.compute_dtype == policy.split("_")[1]
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")


def test_jit_compiled_step_is_finite():
  pretrainer = tiny.pretrainer("electra")
  pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
      "adamw", 1e-3, 10, 2), jit_compile=True, steps_per_execution=2)
  history = pretrainer.fit(
      tf.data.Dataset.from_tensors(tiny.batch()).repeat(4), verbose=0)
  assert np.isfinite(history.history["loss"]).all()


def test_lamb_option_trains():
  pretrainer = tiny.pretrainer("electra")
  pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
      "lamb", 1e-3, 10, 2))
  history = pretrainer.fit(
      tf.data.Dataset.from_tensors(tiny.batch()).repeat(2), verbose=0)
  assert np.isfinite(history.history["loss"]).all()


def test_get_config_round_trip():
  pretrainer = tiny.pretrainer("replace_mlm")
  config = pretrainer.get_config()
  clone = electra_pretrainer.ElectraPretrainer.from_config(config)
  assert clone.objective == "replace_mlm"
  assert clone.get_config() == config
  outputs = clone(tiny.batch())
  assert outputs["main_mlm_logits"].shape == (8, 4, tiny.TINY.vocab_size)


def test_invalid_arguments_are_rejected():
  with pytest.raises(ValueError, match="unknown objective"):
    tiny.pretrainer("electra_20")
  discriminator = tiny.pretrainer("mlm").discriminator_network
  with pytest.raises(ValueError, match="generator_network=None"):
    electra_pretrainer.ElectraPretrainer(
        discriminator, discriminator, mask_token_id=4, excluded_token_ids=[0],
        max_predictions_per_seq=3, objective="mlm")
  with pytest.raises(ValueError, match="needs either"):
    electra_pretrainer.ElectraPretrainer(
        discriminator, None, mask_token_id=4, excluded_token_ids=[0],
        max_predictions_per_seq=3, objective="electra")
