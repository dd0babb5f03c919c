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
