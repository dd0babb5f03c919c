"""The uniform generator (Clark et al., 2020, Section 3.3) draws uniformly.

Without `disallow_correct`, a replacement is uniform over the whole vocabulary,
whatever the original token; with it, uniform over the other ids.
"""

import numpy as np
import pytest
from scipy import stats
import tensorflow as tf

from tests.modeling import tiny

_VOCAB = tiny.TINY.vocab_size
_P_VALUE = 1e-4


def _draws(disallow_correct):
  """(original, sampled) ids of the real masked slots of 8 forward passes."""
  pretrainer = tiny.pretrainer(uniform_generator=True,
                               disallow_correct=disallow_correct)
  inputs = tiny.batch(batch_size=256, pattern=False)
  originals, samples = [], []
  for seed in range(8):
    # Columns: the masking, sampling and dropout seeds, each new per pass.
    seeds = tf.constant([[seed, 100 + seed, 2], [1, 2, 3]], tf.int64)
    outputs = pretrainer._forward(inputs, seeds, training=False)  # pylint: disable=protected-access
    real = outputs["masked_weights"].numpy() > 0
    originals.append(outputs["masked_ids"].numpy()[real])
    samples.append(outputs["sampled_ids"].numpy()[real])
  return np.concatenate(originals), np.concatenate(samples)


def _assert_uniform(values, num_categories):
  counts = np.bincount(values, minlength=num_categories)
  assert counts.size == num_categories
  # Power: a category never drawn alone adds len(values) / num_categories to
  # the statistic, above its critical value at this p-value.
  assert len(values) / num_categories > stats.chi2.isf(_P_VALUE,
                                                       num_categories - 1)
  assert stats.chisquare(counts).pvalue > _P_VALUE, counts


@pytest.mark.parametrize("disallow_correct", [False, True])
def test_replacements_are_uniform_given_the_original(disallow_correct):
  originals, samples = _draws(disallow_correct)
  assert len(samples) > 8000
  # The offset from the original: uniform over 0..V-1, or 1..V-1 when the
  # original is disallowed, for every original (the originals are not
  # uniform: special ids are never masked).
  offsets = (samples - originals) % _VOCAB
  if disallow_correct:
    assert offsets.min() == 1
    _assert_uniform(offsets - 1, _VOCAB - 1)
  else:
    _assert_uniform(offsets, _VOCAB)
    _assert_uniform(samples, _VOCAB)
