"""MaskDropout: drop rate, unbiased scale, one-multiply gradient, state."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.modeling import checkpoints
from official_electra.modeling.layers import mask_dropout


@pytest.fixture
def tf_random_generator():
  tf_keras.backend.experimental.enable_tf_random_generator()
  yield
  tf_keras.backend.experimental.disable_tf_random_generator()


def test_identity_unless_training():
  layer = mask_dropout.MaskDropout(0.5)
  inputs = tf.random.stateless_normal([4, 8], seed=[1, 2])
  np.testing.assert_array_equal(layer(inputs).numpy(), inputs.numpy())
  np.testing.assert_array_equal(layer(inputs, training=False).numpy(),
                                inputs.numpy())
  assert not np.array_equal(layer(inputs, training=True).numpy(),
                            inputs.numpy())


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.01])
def test_drop_fraction_scale_and_unbiased_output(rate):
  layer = mask_dropout.MaskDropout(rate, seed=3)
  # The drop probability is rate rounded to a multiple of 1/65536.
  assert layer.drop_probability == round(rate * 65536) / 65536
  assert abs(layer.drop_probability - rate) <= 0.5 / 65536
  outputs = layer(tf.ones([1000, 1000]), training=True).numpy()
  dropped = np.mean(outputs == 0.0)
  p = layer.drop_probability
  # One million Bernoulli(p) draws: 5 standard deviations.
  assert abs(dropped - p) < 5 * np.sqrt(p * (1 - p) / 1e6)
  np.testing.assert_allclose(outputs[outputs != 0.0], 1.0 / (1.0 - p),
                             rtol=1e-6)
  # Unbiased: the mean output equals the input (5 standard deviations).
  assert abs(outputs.mean() - 1.0) < 5 * np.sqrt(p / (1 - p) / 1e6)


def test_odd_sizes_and_every_element_independent():
  layer = mask_dropout.MaskDropout(0.5, seed=12)
  outputs = layer(tf.ones([3, 7, 5]), training=True).numpy()
  assert outputs.shape == (3, 7, 5)
  flat = layer(tf.ones([200001]), training=True).numpy() == 0.0
  # Neighbours share one 32-bit draw; their decisions must still be
  # independent: P(both dropped) = 1/4.
  both = np.mean(flat[0:-1:2] & flat[1::2])
  assert abs(both - 0.25) < 5 * np.sqrt(0.25 * 0.75 / 100000)


def test_gradient_is_the_upstream_gradient_times_the_mask():
  layer = mask_dropout.MaskDropout(0.3, seed=4)
  inputs = tf.random.stateless_normal([64, 32], seed=[5, 6]) + 3.0
  upstream = tf.random.stateless_normal([64, 32], seed=[7, 8])
  with tf.GradientTape() as tape:
    tape.watch(inputs)
    outputs = layer(inputs, training=True)
    objective = tf.reduce_sum(outputs * upstream)
  mask = outputs.numpy() / inputs.numpy()
  np.testing.assert_allclose(np.unique(np.round(mask, 4)),
                             [0.0, 1 / (1 - layer.drop_probability)], rtol=1e-4)
  np.testing.assert_allclose(tape.gradient(objective, inputs).numpy(),
                             upstream.numpy() * mask, rtol=1e-6)


def test_masks_differ_between_calls_and_inside_tf_function():
  layer = mask_dropout.MaskDropout(0.5, seed=9)
  call = tf.function(lambda x: layer(x, training=True))
  first, second = call(tf.ones([256])), call(tf.ones([256]))
  assert not np.array_equal(first.numpy(), second.numpy())


def test_bfloat16_inputs_keep_their_dtype():
  layer = mask_dropout.MaskDropout(0.1, dtype="mixed_bfloat16")
  outputs = layer(tf.ones([8, 8], tf.bfloat16), training=True)
  assert outputs.dtype == tf.bfloat16


def test_random_state_is_checkpointed(tmp_path, tf_random_generator):
  del tf_random_generator
  inputs = tf_keras.Input([64])
  model = tf_keras.Model(inputs, mask_dropout.MaskDropout(0.5, seed=10)(inputs))
  state = checkpoints.dropout_random_state(model)
  path = tf.train.Checkpoint(dropout_random_state=state).write(
      str(tmp_path / "ckpt"))
  expected = model(tf.ones([2, 64]), training=True).numpy()
  model(tf.ones([2, 64]), training=True)  # Moves the generator on.
  tf.train.Checkpoint(dropout_random_state=state).read(path).assert_consumed()
  np.testing.assert_array_equal(model(tf.ones([2, 64]), training=True).numpy(),
                                expected)


def test_config_round_trip_and_validation():
  layer = mask_dropout.MaskDropout(0.2, seed=11, name="drop")
  clone = mask_dropout.MaskDropout.from_config(layer.get_config())
  assert (clone.rate, clone.seed, clone.name) == (0.2, 11, "drop")
  restored = tf_keras.layers.deserialize(tf_keras.layers.serialize(layer))
  assert isinstance(restored, mask_dropout.MaskDropout)
  with pytest.raises(ValueError, match="rate must be in"):
    mask_dropout.MaskDropout(1.0)


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_output_is_the_input_times_the_mask_non_finite_values_included(dtype):
  # The mask is applied as a multiply (never a select), so a NaN or inf the
  # layer drops still reaches the loss and the step's non-finite check.
  layer = mask_dropout.MaskDropout(0.5, seed=13)
  values = np.array([np.nan, np.inf, -np.inf, -2.0, 3.0, -0.0] * 400)
  inputs = tf.constant(values, dtype)
  outputs = layer(inputs, training=True).numpy().astype(np.float64)
  finite = np.isfinite(values)
  kept = finite & (outputs != 0.0)
  assert 0 < kept.sum() < finite.sum()
  scale = float(tf.cast(1 / (1 - layer.drop_probability), dtype))
  np.testing.assert_array_equal(outputs[kept], values[kept] * scale)
  # Dropped finite values are zeros with the sign of the product.
  dropped = finite & ~kept
  np.testing.assert_array_equal(np.signbit(outputs[dropped]),
                                np.signbit(values[dropped]))
  assert np.isnan(outputs[~finite & ~np.isinf(values)]).all()
  infinite = np.isinf(values)
  assert np.all(np.isnan(outputs[infinite]) | (outputs[infinite] ==
                                               values[infinite] * scale))
  assert np.isnan(outputs[infinite]).any()  # a dropped inf is 0 * inf = NaN


@pytest.mark.parametrize("shape", [[64, 32], [3, 5, 7]])
def test_drop_decisions_are_halves_of_the_stateless_uint32_stream(
    shape, monkeypatch):
  # The same masks as drawing `tf.random.stateless_uniform(..., uint32)` for
  # the layer's seed and splitting each draw into two 16-bit halves (what the
  # layer did before its draws were computed by philox_random).
  layer = mask_dropout.MaskDropout(0.25)
  seed = tf.constant([17, 29], tf.int64)
  monkeypatch.setattr(layer, "_stateless_seed", lambda: seed)
  inputs = tf.ones(shape)
  kept = layer(inputs, training=True).numpy() != 0
  size = int(np.prod(shape))
  words = tf.random.stateless_uniform([(size + 1) // 2], seed=seed,
                                      minval=None, maxval=None,
                                      dtype=tf.uint32).numpy()
  halves = words.view(np.uint16)[:size].reshape(shape)
  np.testing.assert_array_equal(kept, halves >= round(0.25 * 65536))
