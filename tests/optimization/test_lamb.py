"""The `lamb` optimizer takes LAMB's steps (You et al., 2020, Algorithm 2)."""

import numpy as np
import tensorflow as tf

from official_electra.optimization import optimizer_factory


def reference_lamb(weights, gradients, learning_rates, decay, adapt,
                   beta_1=0.9, beta_2=0.999, epsilon=1e-6):
  """LAMB in NumPy: bias-corrected Adam direction plus decoupled decay,
  scaled by the trust ratio |w| / |direction| where `adapt`."""
  momentum = np.zeros_like(weights)
  velocity = np.zeros_like(weights)
  for step, (gradient, learning_rate) in enumerate(
      zip(gradients, learning_rates), start=1):
    momentum = beta_1 * momentum + (1 - beta_1) * gradient
    velocity = beta_2 * velocity + (1 - beta_2) * gradient ** 2
    direction = (momentum / (1 - beta_1 ** step)) / (
        np.sqrt(velocity / (1 - beta_2 ** step)) + epsilon) + decay * weights
    trust_ratio = (np.linalg.norm(weights) / np.linalg.norm(direction)
                   if adapt else 1.0)
    weights = weights - learning_rate * trust_ratio * direction
  return weights


def test_lamb_matches_the_reference_with_the_schedule_and_exclusions():
  rng = np.random.default_rng(0)
  variables = [
      tf.Variable(rng.normal(size=(3, 4)).astype(np.float32),
                  name="layer_0/dense/kernel"),
      tf.Variable(rng.normal(size=(4,)).astype(np.float32),
                  name="layer_0/dense/bias"),
      tf.Variable(1.0 + rng.normal(size=(4,)).astype(np.float32),
                  name="layer_0/attention_layer_norm/gamma"),
  ]
  initial = [variable.numpy() for variable in variables]
  optimizer = optimizer_factory.create_optimizer(
      "lamb", peak_learning_rate=0.1, num_train_steps=10, num_warmup_steps=0,
      weight_decay_rate=0.1)
  gradients = [[rng.normal(size=v.shape).astype(np.float32) for v in variables]
               for _ in range(3)]
  for step_gradients in gradients:
    optimizer.apply_gradients(zip(step_gradients, variables))
  # The schedule at steps 0, 1, 2: 0.1 * (1 - step / 10).
  learning_rates = [0.1, 0.09, 0.08]
  for index, (decay, adapt) in enumerate([(0.1, True), (0.0, False),
                                          (0.0, False)]):
    expected = reference_lamb(initial[index], [g[index] for g in gradients],
                              learning_rates, decay, adapt)
    np.testing.assert_allclose(variables[index].numpy(), expected, rtol=1e-5,
                               err_msg=variables[index].name)
    # The steps are large enough that a missing term would show.
    assert np.abs(expected - initial[index]).max() > 0.05
