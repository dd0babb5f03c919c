"""Every randomly initialised weight of a pretrainer is its own draw.

An unseeded tf_keras initializer instance returns the same stream at every
call; shared between the embedding tables, it made position p's embedding
equal to token id p's and the token types equal to [PAD] and [UNK]. The
original (google-research/electra, model/modeling.py, `embedding_lookup` and
`embedding_postprocessor`) creates each table with its own initializer op,
so the tables are independent.
"""

import itertools

import numpy as np

from tests.modeling import tiny


# The initializer's truncated normal (cut at 2 sigma): standard deviation
# relative to the untruncated one, and kurtosis (4th moment / variance^2).
_PHI_2 = np.exp(-2.0) / np.sqrt(2 * np.pi)  # standard normal density at 2
_MASS = 0.9544997361  # P(|z| < 2)
_VARIANCE = 1 - 4 * _PHI_2 / _MASS
_TRUNCATED_STD = np.sqrt(_VARIANCE)  # 0.8796
_TRUNCATED_KURTOSIS = (3 - 28 * _PHI_2 / _MASS) / _VARIANCE**2  # 2.37


def _random_weights(model):
  seen, weights = set(), []
  for weight in model.weights:
    if id(weight) in seen:  # the generator shares the discriminator's tables
      continue
    seen.add(id(weight))
    values = weight.numpy().ravel()
    if np.std(values) > 0:  # biases, LayerNorm gammas and betas are constant
      weights.append((weight.name, values))
  return weights


def test_no_weight_repeats_the_values_of_another():
  model = tiny.pretrainer(untied_generator_embeddings=True)
  model(tiny.batch(), training=False)
  weights = _random_weights(model)
  names = [name for name, _ in weights]
  assert any("position_embeddings" in name for name in names), names
  assert sum("word_embeddings" in name for name in names) == 2, names
  for (name_a, a), (name_b, b) in itertools.combinations(weights, 2):
    common = min(len(a), len(b))
    assert not np.allclose(a[:common], b[:common]), (name_a, name_b)


def test_embedding_tables_are_uncorrelated_draws_of_the_initializer():
  model = tiny.pretrainer()
  model(tiny.batch(), training=False)
  tables = {name.split("/")[-1].split(":")[0]: values
            for name, values in _random_weights(model)
            if "embeddings" in name and "project" not in name
            and "LayerNorm" not in name}
  words = tables["word_embeddings"]
  stddev = tiny.TINY.initializer_range * _TRUNCATED_STD
  for name, values in tables.items():
    # The sample standard deviation of n draws has a relative spread of
    # sqrt((kurtosis - 1) / 4n); a fixed window (0.2) failed 1 run in ~16 on
    # the 32-value token-type table. 5 sigma per check (five checks; the
    # 32-value one failed 4 of 4e6 simulated draws): fewer than 1 run in
    # 300,000 fails by chance, and the 960-value word table's window (9.4%)
    # still catches an untruncated initializer (13.7% wider).
    window = 5 * np.sqrt((_TRUNCATED_KURTOSIS - 1) / (4 * len(values)))
    assert abs(np.std(values) / stddev - 1) < window, (
        name, np.std(values), window)
    if name != "word_embeddings":
      correlation = np.corrcoef(values, words[:len(values)])[0, 1]
      # Independent draws of this size: |r| < 5 / sqrt(n) but for 1 in
      # ~1.7 million (one draw repeated, as in the bug, gives r = 1).
      assert abs(correlation) < 5 / np.sqrt(len(values)), (name, correlation)
