"""Dynamic masking: statistics over many draws, eagerly and inside tf.data."""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling.layers import dynamic_masking
from tests.modeling import tiny


def make_layer(max_predictions=19, mask_prob=0.15):
  return dynamic_masking.DynamicMasking(
      mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
      max_predictions_per_seq=max_predictions, mask_prob=mask_prob)


@pytest.mark.parametrize("seq_len,mask_prob,expected",
                         [(128, 0.15, 19), (512, 0.15, 79), (512, 0.25, 130)])
def test_slot_count_formula_matches_the_original(seq_len, mask_prob, expected):
  assert dynamic_masking.max_predictions_per_seq(seq_len, mask_prob) == expected


def many_draws(layer, inputs, num_draws):
  draws = []
  for draw in range(num_draws):
    outputs = layer(inputs["input_word_ids"], inputs["input_mask"],
                    seed=tf.constant([draw, 7], tf.int64))
    draws.append({key: value.numpy() for key, value in outputs.items()})
  return draws


def test_masking_statistics_over_many_draws():
  inputs = tiny.batch(batch_size=16, seq_len=128, padded_rows=8, real_len=60,
                      pattern=False)
  ids = inputs["input_word_ids"].numpy()
  real_tokens = inputs["input_mask"].numpy().sum(axis=1)
  layer = make_layer()
  draws = many_draws(layer, inputs, 200)
  kept = masked = 0
  for outputs in draws:
    weights = outputs["masked_weights"]
    positions = outputs["masked_positions"]
    # Slot count: round(num_tokens * 0.15) clamped to [1, 19].
    expected_slots = np.clip(np.round(real_tokens * 0.15), 1, 19)
    np.testing.assert_array_equal(weights.sum(axis=1), expected_slots)
    for row in range(ids.shape[0]):
      chosen = positions[row][weights[row] > 0]
      assert len(set(chosen.tolist())) == len(chosen)  # no duplicates
      # Never a special token or padding.
      assert not np.isin(ids[row, chosen], tiny.SPECIAL_IDS).any()
      assert (chosen < real_tokens[row]).all()
      np.testing.assert_array_equal(outputs["masked_ids"][row][weights[row] > 0],
                                    ids[row, chosen])
      new_tokens = outputs["masked_input_ids"][row, chosen]
      masked += int((new_tokens == tiny.MASK_ID).sum())
      kept += int((new_tokens == ids[row, chosen]).sum())
      # Nothing else changes: no random-token replacement anywhere.
      unchanged = np.ones(ids.shape[1], bool)
      unchanged[chosen] = False
      np.testing.assert_array_equal(outputs["masked_input_ids"][row, unchanged],
                                    ids[row, unchanged])
  total = kept + masked
  assert total > 20000
  # 85% [MASK] / 15% unchanged: 5 standard deviations is about 0.012 here.
  assert abs(masked / total - 0.85) < 0.012


def test_positions_are_uniform_over_candidates():
  inputs = tiny.batch(batch_size=1, seq_len=32, padded_rows=0, pattern=False)
  layer = make_layer(max_predictions=4, mask_prob=0.15)
  counts = np.zeros(32)
  for outputs in many_draws(layer, inputs, 600):
    chosen = outputs["masked_positions"][0][outputs["masked_weights"][0] > 0]
    np.add.at(counts, chosen, 1)
  assert counts[0] == 0 and counts[31] == 0  # [CLS] and [SEP]
  expected = counts.sum() / 30
  chi_square = ((counts[1:31] - expected) ** 2 / expected).sum()
  # 29 degrees of freedom: the 99.9% quantile is 58.3.
  assert chi_square < 58.3


def test_short_sequence_with_fewer_candidates_than_slots():
  ids = tf.constant([[tiny.CLS_ID, 9, tiny.SEP_ID, 0, 0, 0]])
  layer = make_layer(max_predictions=19, mask_prob=1.0)
  outputs = layer(ids, tf.cast(ids != 0, tf.int32), seed=tf.constant([1, 2]))
  np.testing.assert_array_equal(outputs["masked_weights"].numpy().sum(), 1.0)
  assert outputs["masked_positions"].shape == (1, 19)
  assert outputs["masked_positions"].numpy()[0, 0] == 1


def test_runs_inside_tf_data_and_tf_function():
  inputs = tiny.batch(batch_size=4, seq_len=24, padded_rows=2)
  layer = make_layer(max_predictions=4)

  def mask(example):
    return layer(example["input_word_ids"], example["input_mask"],
                 seed=tf.constant([3, 4], tf.int64))

  from_dataset = next(iter(tf.data.Dataset.from_tensors(inputs).map(mask)))
  from_function = tf.function(mask)(inputs)
  for key in from_dataset:
    np.testing.assert_array_equal(from_dataset[key], from_function[key])
  assert from_dataset["masked_weights"].numpy().sum() > 0


def test_special_ids_come_from_arguments_not_constants():
  # With another vocabulary layout, id 2 is an ordinary word and id 7 is [CLS].
  layer = dynamic_masking.DynamicMasking(
      mask_token_id=9, excluded_token_ids=[7, 8, 0], max_predictions_per_seq=3,
      mask_prob=1.0)
  ids = tf.constant([[7, 2, 2, 8]])
  outputs = layer(ids, tf.ones_like(ids), seed=tf.constant([0, 1]))
  chosen = outputs["masked_positions"].numpy()[0][
      outputs["masked_weights"].numpy()[0] > 0]
  assert sorted(chosen.tolist()) == [1, 2]


def test_get_config_round_trip():
  layer = make_layer(max_predictions=5, mask_prob=0.2)
  clone = dynamic_masking.DynamicMasking.from_config(layer.get_config())
  assert clone.get_config() == layer.get_config()


def test_unknown_draws_are_rejected():
  with pytest.raises(ValueError, match="unknown draws"):
    dynamic_masking.DynamicMasking(
        mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
        max_predictions_per_seq=3, draws="with_replacment")


def _original_scatter_update(sequence, updates, positions):
  """The original's scatter, restated in NumPy (ids only).

  google-research/electra pretrain/pretrain_helpers.py, `scatter_update`: the
  updates of each position are summed and floor-divided by their count, so a
  position given several values gets the floor of their mean ("the update is
  only applied once"); updates to index 0 are ignored (the original assumes
  `[CLS]` there).
  """
  sums = np.zeros_like(sequence)
  counts = np.zeros_like(sequence)
  for row in range(sequence.shape[0]):
    np.add.at(sums[row], positions[row], updates[row])
    np.add.at(counts[row], positions[row], 1)
  counts[:, 0] = 0
  return np.where(counts > 0, sums // np.maximum(counts, 1), sequence)


def test_scatter_collapses_duplicates_as_the_originals_scatter_update():
  rng = np.random.default_rng(0)
  sequence = rng.integers(5, 1000, size=(6, 12)).astype(np.int32)
  # Positions 1..11 (the original ignores 0), with many duplicates.
  positions = rng.integers(1, 12, size=(6, 9)).astype(np.int32)
  updates = rng.integers(5, 1000, size=(6, 9)).astype(np.int32)
  expected = _original_scatter_update(sequence, updates, positions)
  written = np.ones_like(positions, bool)
  ours = dynamic_masking.scatter_into_positions(
      tf.constant(sequence), tf.constant(positions), tf.constant(updates),
      tf.constant(written)).numpy()
  np.testing.assert_array_equal(ours, expected)
  assert (ours != sequence).sum() > 20
  # Floats get the plain mean, as the original's float32 branch.
  float_ours = dynamic_masking.scatter_into_positions(
      tf.zeros([1, 4]), tf.constant([[1, 1, 3]]),
      tf.constant([[1.0, 2.0, 5.0]]), tf.constant([[True, True, True]]))
  np.testing.assert_array_equal(float_ours.numpy(), [[0.0, 1.5, 0.0, 5.0]])


def test_scatter_writes_position_zero_and_ignores_unwritten_slots():
  sequence = tf.constant([[10, 11, 12, 13]])
  # A real slot at position 0 and two unused slots that also point at 0.
  ours = dynamic_masking.scatter_into_positions(
      sequence, tf.constant([[0, 2, 0, 0]]), tf.constant([[90, 92, 10, 77]]),
      tf.constant([[True, True, False, False]]))
  np.testing.assert_array_equal(ours.numpy(), [[90, 11, 92, 13]])


@pytest.mark.parametrize("draws", dynamic_masking.DRAWS)
def test_position_zero_is_masked_like_any_other_position(draws):
  # Records that do not start with [CLS]: every position is a candidate, and
  # a row has fewer real slots than slots, so unused slots point at 0 too.
  ids = tf.constant(np.random.default_rng(1).integers(
      5, tiny.TINY.vocab_size, size=(64, 6)), tf.int32)
  layer = dynamic_masking.DynamicMasking(
      mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
      max_predictions_per_seq=5, mask_prob=0.5, keep_original_prob=0.0,
      draws=draws)
  drawn_at_zero = 0
  for draw in range(10):
    outputs = layer(ids, tf.ones_like(ids), seed=tf.constant([draw, 3]))
    weights = outputs["masked_weights"].numpy()
    positions = outputs["masked_positions"].numpy()
    np.testing.assert_array_equal(weights.sum(axis=1), 3)
    for row in range(ids.shape[0]):
      chosen = set(positions[row][weights[row] > 0].tolist())
      drawn_at_zero += 0 in chosen
      # keep_original_prob=0: exactly the chosen positions become [MASK].
      expected = ids.numpy()[row].copy()
      expected[sorted(chosen)] = tiny.MASK_ID
      np.testing.assert_array_equal(outputs["masked_input_ids"][row], expected)
  assert drawn_at_zero > 100


def _original_distinct_masked_share(num_tokens, num_candidates, mask_prob,
                                    num_slots, num_rows, rng):
  """Distinct masked share of the original's draws, simulated in NumPy.

  google-research/electra pretrain/pretrain_helpers.py, `mask`:
  `num_to_predict = max(1, min(N, round(num_tokens * mask_prob)))` slots,
  each an independent uniform draw among the candidates
  (`tf.random.categorical`), duplicates collapsing in `scatter_update`.
  """
  num_to_predict = max(1, min(num_slots, round(num_tokens * mask_prob)))
  draws = rng.integers(0, num_candidates, size=(num_rows, num_to_predict))
  distinct = np.array([len(set(row)) for row in draws.tolist()])
  return distinct.mean() / num_tokens


def _full_rows(num_rows, seq_len, seed):
  """`[CLS] A [SEP] B [SEP]` rows filling seq_len (3 specials per row)."""
  body = np.random.default_rng(seed).integers(
      5, tiny.TINY.vocab_size, size=(num_rows, seq_len))
  body[:, 0] = tiny.CLS_ID
  body[:, seq_len // 2] = tiny.SEP_ID
  body[:, -1] = tiny.SEP_ID
  return tf.constant(body, tf.int32)


# Measured: 13.8% vs 14.8% at 128/15% (Small); 14.0% vs 15.0% at 512/15%
# (Base); 22.1% vs 25.0% at 512/25% (Large).
@pytest.mark.parametrize("seq_len,mask_prob", [(128, 0.15), (512, 0.25)])
def test_distinct_masked_share_of_each_draws_option(seq_len, mask_prob):
  num_rows = 64
  ids = _full_rows(num_rows, seq_len, seed=seq_len)
  num_slots = dynamic_masking.max_predictions_per_seq(seq_len, mask_prob)
  shares = {}
  for draws in dynamic_masking.DRAWS:
    layer = dynamic_masking.DynamicMasking(
        mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
        max_predictions_per_seq=num_slots, mask_prob=mask_prob, draws=draws)
    distinct = []
    for draw in range(20):
      outputs = layer(ids, tf.ones_like(ids), seed=tf.constant([draw, 9]))
      weights = outputs["masked_weights"].numpy()
      positions = outputs["masked_positions"].numpy()
      np.testing.assert_array_equal(weights.sum(axis=1),
                                    round(seq_len * mask_prob))
      distinct += [len(set(positions[row][weights[row] > 0].tolist()))
                   for row in range(num_rows)]
    shares[draws] = np.mean(distinct) / seq_len
  assert shares["without_replacement"] == round(seq_len * mask_prob) / seq_len
  original = _original_distinct_masked_share(
      seq_len, seq_len - 3, mask_prob, num_slots, 200_000,
      np.random.default_rng(0))
  # 1280 rows: the standard error of the share is below 0.0003.
  assert abs(shares["with_replacement"] - original) < 0.0015
  assert shares["with_replacement"] < shares["without_replacement"] - 0.008


def test_with_replacement_draws_and_collapse_as_the_original():
  inputs = tiny.batch(batch_size=16, seq_len=40, padded_rows=8, real_len=20,
                      pattern=False)
  ids = inputs["input_word_ids"].numpy()
  real_tokens = inputs["input_mask"].numpy().sum(axis=1)
  layer = dynamic_masking.DynamicMasking(
      mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
      max_predictions_per_seq=12, mask_prob=0.3, draws="with_replacement")
  counts = np.zeros(ids.shape)
  masked = expected_masked = duplicated_slots = 0
  for outputs in many_draws(layer, inputs, 150):
    weights = outputs["masked_weights"]
    positions = outputs["masked_positions"]
    # Every slot stays a slot, duplicates included (the original's weights).
    np.testing.assert_array_equal(
        weights.sum(axis=1), np.clip(np.round(real_tokens * 0.3), 1, 12))
    for row in range(ids.shape[0]):
      chosen = positions[row][weights[row] > 0]
      np.add.at(counts[row], chosen, 1)
      assert not np.isin(ids[row, chosen], tiny.SPECIAL_IDS).any()
      np.testing.assert_array_equal(
          outputs["masked_ids"][row][weights[row] > 0], ids[row, chosen])
      drawn, times = np.unique(chosen, return_counts=True)
      duplicated_slots += int(times[times > 1].sum())
      # The original's scatter_update: [MASK] where any slot chose [MASK],
      # i.e. with probability 1 - 0.15 ** times; the rest unchanged.
      new_tokens = outputs["masked_input_ids"][row]
      assert np.isin(new_tokens[drawn], [tiny.MASK_ID]).sum() + (
          new_tokens[drawn] == ids[row, drawn]).sum() == len(drawn)
      masked += int((new_tokens[drawn] == tiny.MASK_ID).sum())
      expected_masked += (1 - 0.15 ** times).sum()
      untouched = np.ones(ids.shape[1], bool)
      untouched[drawn] = False
      np.testing.assert_array_equal(new_tokens[untouched], ids[row, untouched])
  # 12 draws among 38 candidates, 6 among 18: duplicates are frequent.
  assert duplicated_slots > 2000
  assert abs(masked - expected_masked) < 0.02 * expected_masked
  # Uniform over each row's candidates (rows 0-7: positions 1..38, 37 degrees
  # of freedom; rows 8-15: 1..18, 17): below the 99.9% quantiles.
  for rows, candidates, quantile in ((slice(0, 8), slice(1, 39), 69.3),
                                     (slice(8, 16), slice(1, 19), 40.8)):
    observed = counts[rows, candidates].sum(axis=0)
    expected = observed.sum() / len(observed)
    chi_square = ((observed - expected) ** 2 / expected).sum()
    assert chi_square < quantile
    assert counts[rows].sum() == observed.sum()


def test_with_replacement_leaves_rows_without_candidates_unmasked():
  ids = tf.constant([[tiny.CLS_ID, tiny.SEP_ID, 0, 0],
                     [tiny.CLS_ID, 9, tiny.SEP_ID, 0]])
  layer = dynamic_masking.DynamicMasking(
      mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
      max_predictions_per_seq=3, mask_prob=1.0, draws="with_replacement")
  outputs = layer(ids, tf.cast(ids != 0, tf.int32), seed=tf.constant([1, 2]))
  np.testing.assert_array_equal(outputs["masked_weights"].numpy(),
                                [[0, 0, 0], [1, 1, 1]])
  np.testing.assert_array_equal(outputs["masked_positions"].numpy(),
                                [[0, 0, 0], [1, 1, 1]])
  np.testing.assert_array_equal(outputs["masked_input_ids"].numpy()[0],
                                ids.numpy()[0])


def test_with_replacement_runs_in_tf_data_and_under_xla_and_round_trips():
  inputs = tiny.batch(batch_size=4, seq_len=24, padded_rows=2)
  layer = dynamic_masking.DynamicMasking(
      mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
      max_predictions_per_seq=4, draws="with_replacement")

  def mask(example):
    return layer(example["input_word_ids"], example["input_mask"],
                 seed=tf.constant([3, 4], tf.int64))

  from_dataset = next(iter(tf.data.Dataset.from_tensors(inputs).map(mask)))
  eager = mask(inputs)
  for key in from_dataset:
    np.testing.assert_array_equal(from_dataset[key], eager[key])
  compiled = tf.function(mask, jit_compile=True)(inputs)
  ids = inputs["input_word_ids"].numpy()
  weights = compiled["masked_weights"].numpy()
  chosen = compiled["masked_positions"].numpy()[weights > 0]
  rows = np.nonzero(weights > 0)[0]
  assert not np.isin(ids[rows, chosen], tiny.SPECIAL_IDS).any()
  np.testing.assert_array_equal(weights.sum(axis=1),
                                eager["masked_weights"].numpy().sum(axis=1))
  clone = dynamic_masking.DynamicMasking.from_config(layer.get_config())
  assert clone.get_config() == layer.get_config()
  assert clone.draws == "with_replacement"
