"""Adversarial ELECTRA (Clark et al., 2020, Section 3.3 and Appendix F): the
generator maximises the discriminator's loss by REINFORCE with a learned
baseline.

On a small fixed problem (one categorical policy per slot, a fixed reward per
token), the estimator of `pretraining_losses.reinforce_loss` agrees in
expectation with the exact gradient of the expected reward, computed by
enumerating the tokens, and the baseline its own loss learns lowers the
estimator's variance. In the pretrainer, the discriminator's loss reaches the
generator's own variables only through the REINFORCE term, and the MLE
warm-up trains the generator by its MLM loss first.
"""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling.models import electra_pretrainer
from official_electra.modeling.models import pretraining_losses
from official_electra.optimization import optimizer_factory
from tests.modeling import tiny

_SLOTS, _TOKENS, _SAMPLES = 3, 5, 20000
_LOGITS = np.array([[0.5, -1.0, 2.0, 0.0, 1.0],
                    [0.0, 0.0, 0.0, 0.0, 0.0],
                    [-2.0, 1.5, 0.3, 0.8, -0.4]], np.float32)
# The reward of each token at each slot (a discriminator's loss is >= 0, and
# here it is large for every token, where a baseline matters most).
_REWARDS = np.array([[3.0, 5.0, 2.0, 4.5, 6.0],
                     [4.0, 2.5, 3.5, 6.0, 2.0],
                     [5.5, 3.0, 4.0, 2.0, 3.0]], np.float32)


def _exact_gradient():
  """d/d logits of the mean over slots of E[R], by enumerating the tokens."""
  logits = tf.Variable(_LOGITS)
  with tf.GradientTape() as tape:
    expected = tf.reduce_sum(tf.nn.softmax(logits) * _REWARDS, axis=-1)
    objective = tf.reduce_mean(expected)
  return tape.gradient(objective, logits).numpy()


def _samples(seed=0):
  rng = np.random.default_rng(seed)
  probabilities = tf.nn.softmax(_LOGITS).numpy()
  return np.stack([rng.choice(_TOKENS, size=_SAMPLES, p=probabilities[slot])
                   for slot in range(_SLOTS)], axis=1)  # [samples, slots]


def _rewards(samples):
  return _REWARDS[np.arange(_SLOTS)[None, :], samples]  # [samples, slots]


def _per_sample_gradients(samples, baseline_logits):
  """Each sample's estimate of the exact gradient, `[samples, slots,
  tokens]`: `(R - b) d log p(x_t) / d logits_t / slots`, with
  `d log p(x_t) / d logits_t = onehot(x_t) - softmax(logits_t)` (the
  surrogate's gradient, checked below, is minus their mean)."""
  baselines = -np.log(1 / (1 + np.exp(-np.asarray(baseline_logits))))
  probabilities = tf.nn.softmax(_LOGITS).numpy()
  score = np.eye(_TOKENS, dtype=np.float32)[samples] - probabilities[None]
  advantages = (_rewards(samples) - baselines)[..., None]
  return advantages * score / _SLOTS


def _surrogate_gradient(samples, baseline_logits):
  """Minus the gradient of `reinforce_loss` over all the samples."""
  logits = tf.Variable(_LOGITS)
  rewards = _rewards(samples)
  with tf.GradientTape() as tape:
    log_probabilities = tf.nn.log_softmax(logits)
    sample_log_probabilities = tf.stack(
        [tf.gather(log_probabilities[slot], samples[:, slot])
         for slot in range(_SLOTS)], axis=1)
    (surrogate, _), _ = pretraining_losses.reinforce_loss(
        sample_log_probabilities, rewards,
        tf.broadcast_to(baseline_logits, rewards.shape),
        tf.ones_like(rewards))
  return -tape.gradient(surrogate, logits).numpy()


def _learned_baseline_logits(samples):
  """The baseline's logits after training them with `reinforce_loss`'s own
  baseline loss on these samples' rewards (what the head learns)."""
  rewards = _rewards(samples)
  baseline_logits = tf.Variable(tf.zeros([_SLOTS]))
  for _ in range(300):
    with tf.GradientTape() as tape:
      _, (baseline_loss, _) = pretraining_losses.reinforce_loss(
          tf.zeros(rewards.shape), rewards,
          tf.broadcast_to(baseline_logits, rewards.shape),
          tf.ones_like(rewards))
    baseline_logits.assign_sub(
        5.0 * tape.gradient(baseline_loss, baseline_logits))
  return baseline_logits.numpy()


def _within(estimate, per_sample, exact, sigmas=4.0):
  standard_error = per_sample.std(axis=0) / np.sqrt(len(per_sample))
  return np.all(np.abs(estimate - exact) <= sigmas * standard_error + 1e-7)


def test_reinforce_agrees_in_expectation_with_the_exact_gradient():
  exact = _exact_gradient()
  samples = _samples()
  for baseline_logits in (np.full([_SLOTS], 30.0, np.float32),  # b ~ 0
                          _learned_baseline_logits(samples)):
    estimate = _surrogate_gradient(samples, baseline_logits)
    per_sample = _per_sample_gradients(samples, baseline_logits)
    # The surrogate's gradient is the mean of the per-sample estimates.
    np.testing.assert_allclose(estimate, per_sample.mean(axis=0), rtol=1e-3,
                               atol=1e-5)
    assert _within(estimate, per_sample, exact)
  # Power: the estimate tells a wrong gradient (the rewards of another slot
  # order) apart at the same tolerance.
  wrong = np.roll(exact, 1, axis=1)
  per_sample = _per_sample_gradients(samples, np.full([_SLOTS], 30.0))
  assert not _within(per_sample.mean(axis=0), per_sample, wrong)


def test_the_learned_baseline_lowers_the_estimators_variance():
  samples = _samples(seed=1)
  learned = _learned_baseline_logits(samples)
  # It follows the reward: between the smallest and largest of each slot.
  baselines = -np.log(1 / (1 + np.exp(-learned)))
  assert np.all(baselines > _REWARDS.min(axis=1))
  assert np.all(baselines < _REWARDS.max(axis=1))
  without = _per_sample_gradients(samples, np.full([_SLOTS], 30.0)).var(axis=0)
  with_baseline = _per_sample_gradients(samples, learned).var(axis=0)
  # Summed over every logit, the variance falls by more than half.
  assert with_baseline.sum() < 0.5 * without.sum(), (with_baseline.sum(),
                                                     without.sum())


def _adversarial(mle_steps=0):
  pretrainer = tiny.pretrainer("adversarial", seed=3)
  pretrainer.adversarial_mle_steps = mle_steps
  pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
      "adamw", 1e-3, 100, 0))
  pretrainer(tiny.batch(), training=False)
  return pretrainer


def _generator_own_variables(pretrainer):
  shared = {variable.ref() for variable in
            pretrainer.discriminator_network.embedding_layer.weights}
  own = (pretrainer.generator_network.trainable_variables
         + pretrainer.generator_head.trainable_variables
         + pretrainer.baseline_head.trainable_variables)
  return [variable for variable in own if variable.ref() not in shared]


def _discriminator_own_variables(pretrainer):
  shared = {variable.ref() for variable in
            pretrainer.discriminator_network.embedding_layer.weights}
  own = (pretrainer.discriminator_network.trainable_variables
         + pretrainer.discriminator_head.trainable_variables)
  return [variable for variable in own if variable.ref() not in shared]


def _gradients(pretrainer, pick):
  inputs = tiny.batch(pattern=False)
  seeds = tf.constant([[1, 2, 3], [4, 5, 6]], tf.int64)
  generator = _generator_own_variables(pretrainer)
  discriminator = _discriminator_own_variables(pretrainer)
  with tf.GradientTape(persistent=True) as tape:
    outputs = pretrainer._forward(inputs, seeds, training=True)  # pylint: disable=protected-access
    losses = pretrainer.compute_pretraining_losses(inputs, outputs)
    value = pick(losses)
  return (tape.gradient(value, generator), tape.gradient(value, discriminator),
          losses)


def test_the_discriminator_loss_reaches_the_generator_only_through_reinforce():
  pretrainer = _adversarial()
  assert len(_generator_own_variables(pretrainer)) > 20
  to_generator, to_discriminator, _ = _gradients(
      pretrainer, lambda losses: losses["discriminator"][0])
  assert all(gradient is None for gradient in to_generator)
  assert all(gradient is not None for gradient in to_discriminator)
  # REINFORCE holds the rewards constant: nothing flows back into the
  # discriminator through them.
  to_generator, to_discriminator, _ = _gradients(
      pretrainer, lambda losses: losses["reinforce"][0])
  assert all(gradient is None for gradient in to_discriminator)
  reached = [gradient for gradient in to_generator if gradient is not None]
  assert len(reached) > 20
  assert any(float(tf.reduce_max(tf.abs(gradient))) > 0 for gradient in reached)
  # The total's gradient in the generator's own variables is exactly that of
  # the REINFORCE and baseline terms.
  total, _, losses = _gradients(pretrainer, lambda losses: losses["loss"])
  _assert_same_gradients(total, _gradients(
      pretrainer,
      lambda losses: losses["reinforce"][0] + losses["baseline"][0])[0])
  assert np.isfinite(float(losses["loss"]))


def _assert_same_gradients(got, want):
  for got_gradient, wanted in zip(got, want):
    if wanted is None:
      assert got_gradient is None
    else:
      np.testing.assert_allclose(tf.convert_to_tensor(got_gradient),
                                 tf.convert_to_tensor(wanted), atol=1e-6)


def test_the_mle_warm_up_trains_the_generator_by_its_mlm_loss_first():
  pretrainer = _adversarial(mle_steps=5)
  warm, _, losses = _gradients(pretrainer, lambda losses: losses["loss"])
  _assert_same_gradients(warm, _gradients(
      pretrainer,
      lambda losses: losses["generator"][0] + losses["baseline"][0])[0])
  pretrainer.optimizer.iterations.assign(5)
  after, _, _ = _gradients(pretrainer, lambda losses: losses["loss"])
  _assert_same_gradients(after, _gradients(
      pretrainer,
      lambda losses: losses["reinforce"][0] + losses["baseline"][0])[0])
  # The two terms differ: the switch at step 5 is seen.
  assert any(not np.allclose(tf.convert_to_tensor(a), tf.convert_to_tensor(b))
             for a, b in zip(warm, after) if a is not None)
  assert "reinforce" in losses


def test_the_logs_report_the_generators_mlm_accuracy_and_the_reward():
  pretrainer = _adversarial()
  history = pretrainer.fit(
      tf.data.Dataset.from_tensors(tiny.batch()).repeat(), steps_per_epoch=3,
      verbose=0).history
  for name in ("masked_lm_accuracy", "disc_auc", "adversarial_reward",
               "baseline_loss", "sampled_masked_lm_accuracy"):
    assert name in history and np.isfinite(history[name]).all(), name
  assert min(history["adversarial_reward"]) > 0


def test_adversarial_mle_steps_is_for_the_adversarial_objective_only():
  with pytest.raises(ValueError, match="adversarial_mle_steps"):
    discriminator = tiny.pretrainer("electra").discriminator_network
    electra_pretrainer.ElectraPretrainer(
        tiny.model("electra", discriminator, None), mask_token_id=tiny.MASK_ID,
        excluded_token_ids=tiny.SPECIAL_IDS, max_predictions_per_seq=4,
        objective="electra", uniform_generator=True, adversarial_mle_steps=3)
