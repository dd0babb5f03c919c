"""The original AdamW (no bias correction) and the warm-up x decay schedule."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.optimization import adamw
from official_electra.optimization import optimizer_factory
from official_electra.optimization import schedules
from tests.modeling import tiny


def reference_adamw(weights, gradients, learning_rate, decay, beta_1=0.9,
                    beta_2=0.999, epsilon=1e-6):
  """The original AdamWeightDecayOptimizer, written out in NumPy."""
  momentum = np.zeros_like(weights)
  velocity = np.zeros_like(weights)
  for gradient in gradients:
    momentum = beta_1 * momentum + (1 - beta_1) * gradient
    velocity = beta_2 * velocity + (1 - beta_2) * gradient ** 2
    update = momentum / (np.sqrt(velocity) + epsilon) + decay * weights
    weights = weights - learning_rate * update
  return weights


def test_matches_the_original_update_and_exclusions():
  kernel = tf.Variable([[0.5, -1.0], [2.0, 0.1]], name="dense/kernel")
  bias = tf.Variable([0.3, -0.2], name="dense/bias")
  gamma = tf.Variable([1.0, 1.5], name="encoder/LayerNorm/gamma")
  optimizer = adamw.ElectraAdamW(learning_rate=0.1, weight_decay_rate=0.01)
  rng = np.random.default_rng(0)
  gradients = [[rng.normal(size=v.shape).astype(np.float32)
                for v in (kernel, bias, gamma)] for _ in range(3)]
  initial = [v.numpy() for v in (kernel, bias, gamma)]
  for step_gradients in gradients:
    optimizer.apply_gradients(zip(step_gradients, [kernel, bias, gamma]))
  for index, (variable, decay) in enumerate(
      [(kernel, 0.01), (bias, 0.0), (gamma, 0.0)]):
    expected = reference_adamw(initial[index], [g[index] for g in gradients],
                               0.1, decay)
    np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_a_real_pretrainer_decays_its_matrices_and_not_its_vectors(name):
  # The original's exclusions ("LayerNorm", "layer_norm", "bias") leave every
  # LayerNorm scale/offset and every bias of the model undecayed, and decay
  # every kernel and embedding table: in ELECTRA the vectors are exactly the
  # excluded variables. With zero gradients both optimizers move a decayed
  # variable by its decay alone and leave an excluded one unchanged.
  pretrainer = tiny.pretrainer()
  pretrainer(tiny.batch(), training=False)
  variables = pretrainer.trainable_variables
  names = [variable.name for variable in variables]
  assert any("embeddings/LayerNorm/gamma" in n for n in names)
  assert any("attention_layer_norm/gamma" in n for n in names)
  assert any("generator_predictions/LayerNorm/beta" in n for n in names)
  assert any("generator_predictions/output_bias" in n for n in names)
  assert any("word_embeddings" in n for n in names)
  rng = np.random.default_rng(0)
  for variable in variables:  # Biases and LayerNorm offsets start at zero.
    variable.assign(rng.uniform(0.5, 1.5, variable.shape))
  optimizer = optimizer_factory.create_optimizer(
      name, peak_learning_rate=0.1, num_train_steps=10, num_warmup_steps=0,
      weight_decay_rate=0.5)
  before = {variable.name: variable.numpy() for variable in variables}
  optimizer.apply_gradients(
      [(tf.zeros_like(variable), variable) for variable in variables])
  decayed = {variable.name for variable in variables
             if not np.array_equal(variable.numpy(), before[variable.name])}
  matrices = {variable.name for variable in variables
              if len(variable.shape) == 2}
  assert decayed ^ matrices == set()  # names wrongly decayed or excluded
  # AdamW: w -= lr * rate * w; LAMB's trust ratio |w| / |rate * w| makes it
  # w -= lr * w.
  shrink = 1 - 0.1 * 0.5 if name == "adamw" else 1 - 0.1
  for variable in variables:
    if variable.name in matrices:
      np.testing.assert_allclose(variable.numpy(),
                                 shrink * before[variable.name], rtol=1e-5)


def test_no_bias_correction_makes_the_first_step_larger_than_adam():
  # Adam's first step is lr * sign(g); without correction it is
  # lr * 0.1 / sqrt(0.001) = 3.16 * lr.
  variable = tf.Variable([1.0], name="w")
  adamw.ElectraAdamW(0.01, weight_decay_rate=0.0).apply_gradients(
      [(tf.constant([5.0]), variable)])
  np.testing.assert_allclose(1.0 - variable.numpy(), [0.01 * 0.1 / 0.001 ** 0.5],
                             rtol=1e-4)


def test_learning_rate_multipliers_scale_per_variable():
  first = tf.Variable([1.0], name="layer_0/kernel")
  second = tf.Variable([1.0], name="layer_1/kernel")
  optimizer = adamw.ElectraAdamW(
      0.01, weight_decay_rate=0.0,
      learning_rate_multipliers=lambda name: 0.5 if "layer_0" in name else 1.0)
  optimizer.apply_gradients([(tf.constant([1.0]), first),
                             (tf.constant([1.0]), second)])
  np.testing.assert_allclose((1.0 - first.numpy()) / (1.0 - second.numpy()),
                             [0.5], rtol=1e-5)


def test_schedule_is_linear_decay_times_warmup_ramp():
  schedule = schedules.WarmupLinearDecay(1e-3, num_train_steps=100,
                                         num_warmup_steps=10)
  values = [float(schedule(step)) for step in (0, 5, 10, 50, 100, 150)]
  expected = [0.0, 1e-3 * 0.95 * 0.5, 1e-3 * 0.9, 1e-3 * 0.5, 0.0, 0.0]
  np.testing.assert_allclose(values, expected, atol=1e-9)
  clone = schedules.WarmupLinearDecay(**schedule.get_config())
  assert float(clone(50)) == pytest.approx(5e-4)


def test_factory_rejects_unknown_names_and_clipping():
  with pytest.raises(ValueError, match="unknown optimizer"):
    optimizer_factory.create_optimizer("sgd")
  with pytest.raises(ValueError, match="clips"):
    adamw.ElectraAdamW(1e-3, global_clipnorm=1.0)
  assert isinstance(optimizer_factory.create_optimizer("lamb"),
                    tf_keras.optimizers.legacy.Optimizer)
