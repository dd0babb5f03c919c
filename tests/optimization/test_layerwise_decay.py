"""Tests for the layer-wise learning-rate decay multipliers."""

import pytest

from official_electra.optimization import layerwise_decay

_NAMES = {
    "head": "electra_classifier/classification_head/logits/kernel:0",
    "top": "discriminator/layer_2/output/kernel:0",
    "middle": "discriminator/layer_1/attention_layer_norm/gamma:0",
    "bottom": "discriminator/layer_0/attention_qkv/bias:0",
    "embeddings": "discriminator/embeddings/word_embeddings:0",
    "projection": "discriminator/embeddings_project/kernel:0",
}


def _multipliers(rule):
  multiplier = layerwise_decay.layerwise_learning_rate_multipliers(
      num_layers=3, decay_rate=0.5, rule=rule)
  return {key: multiplier(name) for key, name in _NAMES.items()}


def test_paper_rule_top_block_gets_one_factor():
  assert _multipliers("paper") == {
      "head": 1.0, "top": 0.5, "middle": 0.25, "bottom": 0.125,
      "embeddings": 0.0625, "projection": 0.0625}


def test_original_code_rule_top_block_gets_two_factors():
  assert _multipliers("original_code") == {
      "head": 1.0, "top": 0.25, "middle": 0.125, "bottom": 0.0625,
      "embeddings": 0.03125, "projection": 0.03125}


def test_block_ten_is_not_block_one():
  multiplier = layerwise_decay.layerwise_learning_rate_multipliers(12, 0.8)
  assert multiplier("enc/layer_10/output/bias:0") == pytest.approx(0.8**2)
  assert multiplier("enc/layer_1/output/bias:0") == pytest.approx(0.8**11)
  assert multiplier("enc/layer_11/output_layer_norm/beta:0") == pytest.approx(0.8)


def test_decay_rate_one_is_uniform():
  multiplier = layerwise_decay.layerwise_learning_rate_multipliers(3, 1.0)
  assert {multiplier(name) for name in _NAMES.values()} == {1.0}


def test_invalid_arguments_are_errors():
  with pytest.raises(ValueError, match="unknown layer-wise decay rule"):
    layerwise_decay.layerwise_learning_rate_multipliers(3, 0.8, rule="bert")
  with pytest.raises(ValueError, match="decay_rate"):
    layerwise_decay.layerwise_learning_rate_multipliers(3, 1.5)
  multiplier = layerwise_decay.layerwise_learning_rate_multipliers(3, 0.8)
  with pytest.raises(ValueError, match="block 3, but the encoder has 3"):
    multiplier("enc/layer_3/output/bias:0")
