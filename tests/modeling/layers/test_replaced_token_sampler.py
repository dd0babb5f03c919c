"""The Gumbel-max sampler: exact softmax samples, no gradient, no one-hot."""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling.layers import replaced_token_sampler


def sample_counts(logits, temperature, num_draws):
  sampler = replaced_token_sampler.ReplacedTokenSampler(temperature)
  # [num_draws, 1, vocab]: many independent slots in one call.
  tiled = tf.tile(tf.constant(logits, tf.float32)[tf.newaxis, tf.newaxis, :],
                  [num_draws, 1, 1])
  samples = sampler(tiled, seed=tf.constant([11, 12])).numpy().ravel()
  return np.bincount(samples, minlength=len(logits))


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
def test_sample_frequencies_match_tempered_softmax(temperature):
  logits = np.array([2.0, 1.0, 0.5, 0.0, -1.0, -3.0])
  num_draws = 40000
  counts = sample_counts(logits, temperature, num_draws)
  probs = np.exp(logits / temperature)
  probs /= probs.sum()
  expected = probs * num_draws
  chi_square = ((counts - expected) ** 2 / expected).sum()
  # 5 degrees of freedom: the 99.9% quantile of chi-square is 20.5.
  assert chi_square < 20.5, (counts, expected)


def test_wrong_temperature_is_detected_by_the_same_test():
  # The goodness-of-fit check has power: T=1 samples fail against T=2 probs.
  logits = np.array([2.0, 1.0, 0.5, 0.0, -1.0, -3.0])
  counts = sample_counts(logits, 1.0, 40000)
  probs = np.exp(logits / 2.0)
  expected = probs / probs.sum() * 40000
  assert ((counts - expected) ** 2 / expected).sum() > 20.5


def test_no_gradient_flows_through_samples():
  sampler = replaced_token_sampler.ReplacedTokenSampler()
  logits = tf.Variable(tf.random.normal([2, 3, 7]))
  with tf.GradientTape() as tape:
    samples = sampler(logits, seed=tf.constant([1, 2]))
    surrogate = tf.reduce_sum(tf.cast(samples, tf.float32))
  assert tape.gradient(surrogate, logits) is None
  assert samples.dtype == tf.int32 and samples.shape == (2, 3)


def test_bfloat16_logits_sample_in_float32():
  sampler = replaced_token_sampler.ReplacedTokenSampler()
  logits = tf.cast(tf.random.normal([2, 3, 7]), tf.bfloat16)
  samples = sampler(logits, seed=tf.constant([1, 2]))
  assert samples.shape == (2, 3)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_samples_are_the_argmax_of_logits_plus_stateless_gumbel_noise(
    temperature):
  # Pins the noise to tf.random.stateless_uniform's draws for the seed (the
  # sampler computes them with philox_random): seeded runs sample as before.
  logits = tf.random.stateless_normal([3, 4, 50], seed=[5, 6]) * 2.0
  seed = tf.constant([21, 22])
  uniform = tf.random.stateless_uniform(
      [3, 4, 50], seed=seed, minval=np.finfo(np.float32).tiny, maxval=1.0)
  gumbel_noise = -tf.math.log(-tf.math.log(uniform))
  expected = tf.argmax(logits / temperature + gumbel_noise, axis=-1,
                       output_type=tf.int32)
  sampler = replaced_token_sampler.ReplacedTokenSampler(temperature)
  np.testing.assert_array_equal(sampler(logits, seed=seed).numpy(),
                                expected.numpy())


def test_rejects_bad_temperature_and_round_trips_config():
  with pytest.raises(ValueError, match="temperature"):
    replaced_token_sampler.ReplacedTokenSampler(0.0)
  sampler = replaced_token_sampler.ReplacedTokenSampler(0.7)
  clone = replaced_token_sampler.ReplacedTokenSampler.from_config(
      sampler.get_config())
  assert clone.temperature == 0.7


def _original_disallowed_probs(logits, original_id, temperature):
  """The original's sampling distribution with `disallow_correct`, restated.

  google-research/electra pretrain/pretrain_helpers.py, `sample_from_softmax`
  (called by run_pretraining.py `_get_fake_data` with `mlm_logits /
  temperature` and a one-hot of the original ids): `logits -= 1000 *
  disallow`, then a Gumbel-max sample of the softmax.
  """
  tempered = np.asarray(logits, np.float64) / temperature
  tempered[original_id] -= 1000.0
  probs = np.exp(tempered - tempered.max())
  return probs / probs.sum()


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_disallow_correct_never_samples_the_original(temperature):
  # The original token is by far the likeliest: without the option it would
  # be drawn about 95% of the time.
  logits = np.array([2.0, 1.0, 9.0, 0.0, -1.0, 0.5])
  num_draws = 40000
  tiled = tf.tile(tf.constant(logits, tf.float32)[tf.newaxis, tf.newaxis, :],
                  [num_draws, 1, 1])
  original_ids = tf.fill([num_draws, 1], 2)
  sampler = replaced_token_sampler.ReplacedTokenSampler(
      temperature, disallow_correct=True)
  samples = sampler(tiled, seed=tf.constant([11, 12]),
                    original_ids=original_ids).numpy().ravel()
  assert not (samples == 2).any()
  counts = np.bincount(samples, minlength=len(logits))
  expected = _original_disallowed_probs(logits, 2, temperature) * num_draws
  others = np.arange(len(logits)) != 2
  chi_square = ((counts[others] - expected[others]) ** 2 /
                expected[others]).sum()
  # 4 degrees of freedom: the 99.9% quantile of chi-square is 18.5.
  assert chi_square < 18.5, (counts, expected)


def test_disallow_correct_per_slot_and_off_is_unchanged():
  logits = tf.random.stateless_normal([4, 19, 50], seed=[1, 2]) * 3.0
  original_ids = tf.random.stateless_uniform([4, 19], seed=[3, 4], maxval=50,
                                             dtype=tf.int32)
  seed = tf.constant([5, 6])
  on = replaced_token_sampler.ReplacedTokenSampler(disallow_correct=True)(
      logits, seed=seed, original_ids=original_ids)
  assert not np.any(on.numpy() == original_ids.numpy())
  default = replaced_token_sampler.ReplacedTokenSampler()(logits, seed=seed)
  off = replaced_token_sampler.ReplacedTokenSampler(disallow_correct=False)(
      logits, seed=seed, original_ids=original_ids)
  np.testing.assert_array_equal(off.numpy(), default.numpy())
  # The option changes only the slots whose sample was the original.
  same = default.numpy() != original_ids.numpy()
  np.testing.assert_array_equal(on.numpy()[same], default.numpy()[same])
  with pytest.raises(ValueError, match="original_ids"):
    replaced_token_sampler.ReplacedTokenSampler(disallow_correct=True)(
        logits, seed=seed)


def test_disallow_correct_round_trips_config():
  sampler = replaced_token_sampler.ReplacedTokenSampler(disallow_correct=True)
  clone = replaced_token_sampler.ReplacedTokenSampler.from_config(
      sampler.get_config())
  assert clone.disallow_correct
