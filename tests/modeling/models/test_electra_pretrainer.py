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
def test_tiny_model_overfits_one_batch_in_300_steps(objective):
  tf_keras.utils.set_random_seed(0)
  # A full-size generator (as Small++) learns fast enough for ELECTRA 15%,
  # whose discriminator only sees negatives once the generator is right.
  # 300 steps, not 200, since the embedding tables are independent draws
  # (they were one draw before): ELECTRA 15%'s loss then swings by about a
  # tenth of the initial loss from one 100 steps to the next (seeds 0, 1, 2:
  # 0.42, 0.40, 0.48 of it at step 100; 0.53, 0.44, 0.39 at 200; 0.39, 0.33,
  # 0.31 at 300).
  pretrainer = compiled(objective, generator_fraction=1.0)
  inputs = tiny.batch()
  initial = mean_loss(pretrainer, inputs)
  history = pretrainer.fit(tf.data.Dataset.from_tensors(inputs).repeat(),
                           steps_per_epoch=300, epochs=1, verbose=0)
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
        tiny.model("mlm", discriminator, discriminator), mask_token_id=4,
        excluded_token_ids=[0], max_predictions_per_seq=3, objective="mlm")
  with pytest.raises(ValueError, match="needs either"):
    electra_pretrainer.ElectraPretrainer(
        tiny.model("electra", discriminator, None), mask_token_id=4,
        excluded_token_ids=[0], max_predictions_per_seq=3,
        objective="electra")
  # Spans and whole words are drawn without replacement only.
  with pytest.raises(ValueError, match="masking_draws='with_replacement' is "
                                       "for masking_scheme='tokens'"):
    electra_pretrainer.ElectraPretrainer(
        tiny.model("mlm", discriminator, None), mask_token_id=4,
        excluded_token_ids=[0], max_predictions_per_seq=3, objective="mlm",
        masking_scheme="spans", masking_draws="with_replacement")


def _same_weights(pretrainer, reference, inputs):
  pretrainer(inputs)
  pretrainer.set_weights(reference.get_weights())
  return pretrainer


class OriginalFavouringHead(tf_keras.layers.Layer):
  """Generator logits that give the original token about 98% of the mass."""

  def __init__(self, input_ids):
    super().__init__()
    self.input_ids = input_ids

  def call(self, sequence, positions):
    del sequence
    originals = tf.gather(self.input_ids, positions, batch_dims=1)
    return 8.0 * tf.one_hot(originals, tiny.TINY.vocab_size)


@pytest.mark.parametrize("uniform_generator", [False, True],
                         ids=["generator", "uniform"])
def test_disallow_correct_never_samples_the_original(uniform_generator):
  inputs = tiny.batch()
  without = tiny.pretrainer("electra", uniform_generator=uniform_generator)
  disallowing = tiny.pretrainer("electra", uniform_generator=uniform_generator,
                                disallow_correct=True)
  if not uniform_generator:
    # Without the option the generator's sample is then the original at
    # about 98% of the slots.
    for pretrainer in (without, disallowing):
      pretrainer.generator_head = OriginalFavouringHead(
          inputs["input_word_ids"])
  # A uniform generator draws the original at 1 slot in 60 without the
  # option: about 20 of the 1200 slots drawn here.
  correct_without = correct_with = slots = 0
  for seed in range(50):
    outputs = forward(disallowing, inputs, seed=(seed, 1))
    reference = forward(without, inputs, seed=(seed, 1))
    real = outputs["masked_weights"].numpy() > 0
    correct_with += int((outputs["sampled_ids"].numpy()[real] ==
                         outputs["masked_ids"].numpy()[real]).sum())
    correct_without += int((reference["sampled_ids"].numpy()[real] ==
                            reference["masked_ids"].numpy()[real]).sum())
    slots += int(real.sum())
    # Every masked position is then a replaced one.
    assert outputs["replaced_token_labels"].numpy().sum() == real.sum()
  assert slots == 1200
  assert correct_with == 0
  assert correct_without > (1000 if not uniform_generator else 5)


@pytest.mark.parametrize("objective", ["electra", "electra_15", "replace_mlm",
                                       "all_tokens_mlm"])
def test_disallow_correct_off_is_the_default_bit_for_bit(objective):
  inputs = tiny.batch(pattern=False)
  default = tiny.pretrainer(objective)
  default(inputs)
  off = _same_weights(tiny.pretrainer(objective, disallow_correct=False),
                      default, inputs)
  expected = forward(default, inputs)
  outputs = forward(off, inputs)
  assert outputs.keys() == expected.keys()
  for key, value in expected.items():
    np.testing.assert_array_equal(outputs[key].numpy(), value.numpy(),
                                  err_msg=key)


def test_a_real_slot_at_position_zero_is_written():
  # Records that do not start with [CLS]: position 0 is a candidate, and the
  # unused slots also point at it.
  inputs = tiny.batch(pattern=False)
  ids = inputs["input_word_ids"].numpy()
  ids[:, 0] = 7
  inputs = dict(inputs, input_word_ids=tf.constant(ids))
  pretrainer = tiny.pretrainer("electra_15", max_predictions_per_seq=8)
  pretrainer.sampler = FixedSampler(tf.fill([8, 8], 9))
  written_at_zero = 0
  for seed in range(40):
    outputs = forward(pretrainer, inputs, seed=(seed, 2))
    weights = outputs["masked_weights"].numpy()
    positions = outputs["masked_positions"].numpy()
    assert (weights.sum(axis=1) < 8).all()  # Unused slots in every row.
    for row in range(ids.shape[0]):
      chosen = positions[row][weights[row] > 0]
      expected = ids[row].copy()
      expected[chosen] = 9
      np.testing.assert_array_equal(outputs["corrupted_ids"][row], expected)
      expected_weights = np.zeros(ids.shape[1])
      expected_weights[chosen] = 1.0
      np.testing.assert_array_equal(outputs["discriminator_weights"][row],
                                    expected_weights)
      written_at_zero += 0 in chosen
  assert written_at_zero > 10


def _original_fake_input_ids(input_ids, sampled_ids, positions, weights):
  """The discriminator's input as the original builds it, in NumPy.

  google-research/electra run_pretraining.py, `_get_fake_data`: unmask, then
  pretrain_helpers.py `scatter_update` of the samples at the masked positions
  (unused slots point at 0, whose updates it ignores): a position given
  several samples gets the floor of their mean.
  """
  corrupted = input_ids.copy()
  for row in range(input_ids.shape[0]):
    real = weights[row] > 0
    for position in set(positions[row][real].tolist()) - {0}:
      samples = sampled_ids[row][real][positions[row][real] == position]
      corrupted[row, position] = samples.sum() // len(samples)
  return corrupted


def test_with_replacement_draws_build_the_originals_fake_input():
  inputs = tiny.batch(pattern=False)
  ids = inputs["input_word_ids"].numpy()
  pretrainer = tiny.pretrainer("electra", max_predictions_per_seq=6,
                               masking_draws="with_replacement")
  duplicated = 0
  for seed in range(20):
    outputs = forward(pretrainer, inputs, seed=(seed, 4))
    weights = outputs["masked_weights"].numpy()
    positions = outputs["masked_positions"].numpy()
    expected = _original_fake_input_ids(
        ids, outputs["sampled_ids"].numpy(), positions, weights)
    np.testing.assert_array_equal(outputs["corrupted_ids"], expected)
    np.testing.assert_array_equal(outputs["replaced_token_labels"],
                                  (expected != ids).astype(np.int32))
    duplicated += sum(
        len(row[w > 0]) - len(set(row[w > 0].tolist()))
        for row, w in zip(positions, weights))
  assert duplicated > 10


def test_options_round_trip_config():
  pretrainer = tiny.pretrainer("electra", disallow_correct=True,
                               masking_draws="with_replacement")
  config = pretrainer.get_config()
  clone = electra_pretrainer.ElectraPretrainer.from_config(config)
  assert clone.get_config() == config
  assert clone.sampler.disallow_correct
  assert clone.masking.draws == "with_replacement"


def test_jit_compiled_step_with_the_originals_options_is_finite():
  pretrainer = tiny.pretrainer("electra", disallow_correct=True,
                               masking_draws="with_replacement")
  pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
      "adamw", 1e-3, 10, 2), jit_compile=True, steps_per_execution=2)
  history = pretrainer.fit(
      tf.data.Dataset.from_tensors(tiny.batch()).repeat(4), verbose=0)
  assert np.isfinite(history.history["loss"]).all()
  assert history.history["sampled_masked_lm_accuracy"][-1] == 0.0
