"""philox_random: TensorFlow's stateless Philox stream, bit for bit, in XLA."""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling.layers import philox_random

SEEDS = [[3, 4], [0, 0], [-1, 2**31 - 1], [123456789, -987654321]]


def tensorflow_uint32(num_elements, seed):
  return tf.random.stateless_uniform([num_elements], seed=seed, minval=None,
                                     maxval=None, dtype=tf.uint32).numpy()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("num_elements", [0, 1, 3, 4, 5, 1001, 65539])
def test_uint32_draws_are_tensorflows(seed, num_elements):
  seed = tf.constant(seed, tf.int32)
  np.testing.assert_array_equal(
      philox_random.uniform_uint32(num_elements, seed).numpy(),
      tensorflow_uint32(num_elements, seed))


def test_int64_seeds_and_sizes_known_only_when_run():
  @tf.function(input_signature=[tf.TensorSpec([None], tf.float32),
                                tf.TensorSpec([2], tf.int64)])
  def draws(values, seed):
    return philox_random.uniform_uint32(tf.size(values), seed)

  seed = tf.constant([2**40 + 5, -7], tf.int64)
  for size in (9, 17, 2):
    np.testing.assert_array_equal(draws(tf.zeros([size]), seed).numpy(),
                                  tensorflow_uint32(size, seed))


def test_the_128_bit_counter_carries_between_its_halves():
  # Blocks 0 and 1 of this counter are at 2**64 - 2 and 2**64 - 1; block 2
  # carries into the high half.
  key = tf.constant([0x1234_5678_9ABC_DEF0], tf.uint64)
  counter = tf.constant([2**64 - 2, 5], tf.uint64)
  ours = philox_random._bits(key, counter, 40).numpy()
  theirs = tf.raw_ops.StatelessRandomUniformFullIntV2(
      shape=[40], key=key, counter=counter, alg=1, dtype=tf.uint32).numpy()
  np.testing.assert_array_equal(ours, theirs)
  # The blocks after the carry differ from those of the counter's low half
  # wrapping without one.
  wrapped = philox_random._bits(
      key, tf.constant([0, 5], tf.uint64), 4).numpy()
  assert not np.array_equal(ours[8:12], wrapped)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("shape", [[1], [7, 13], [2, 3, 1001]])
def test_open_unit_floats_are_tensorflows_and_never_zero(seed, shape):
  seed = tf.constant(seed, tf.int32)
  ours = philox_random.uniform_open_unit(shape, seed).numpy()
  theirs = tf.random.stateless_uniform(
      shape, seed=seed, minval=philox_random.TINY, maxval=1.0).numpy()
  assert ours.shape == tuple(shape) and ours.dtype == np.float32
  np.testing.assert_array_equal(ours, theirs)
  assert (ours > 0).all() and (ours < 1).all()


def test_an_all_zero_mantissa_becomes_the_smallest_normal_float():
  # The one value for which `max(u, TINY)` is not `u`: find a seed whose
  # stream has a word with zero low 23 bits in the first 2**22 draws.
  for seed in range(50):
    words = tensorflow_uint32(1 << 22, [seed, 1])
    zero = np.flatnonzero((words & 0x7FFFFF) == 0)
    if zero.size:
      break
  else:
    pytest.fail("no zero mantissa in 50 seeds' first 2**22 draws")
  floats = philox_random.uniform_open_unit([1 << 22], tf.constant([seed, 1]))
  assert floats.numpy()[zero[0]] == np.float32(philox_random.TINY)
