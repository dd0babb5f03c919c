"""PretrainingMetrics' values agree with scikit-learn on fixed predictions."""

import numpy as np
import pytest
from sklearn import metrics as sklearn_metrics
import tensorflow as tf

from official_electra.modeling.models import pretraining_losses
from official_electra.modeling.models import pretraining_metrics

_BATCH, _SEQ_LEN, _SLOTS, _VOCAB = 16, 24, 4, 12
# Keras' AUC counts predictions above 200 thresholds 0, 1/199, ..., 1 and
# integrates the ROC curve by trapezoids; for probabilities strictly between
# its thresholds that is the exact ROC AUC (trapezoids over ties), as
# scikit-learn computes it.
_GRID = (np.arange(199) + 0.5) / 199


def _step(rng):
  """One step's outputs and losses: padded rows, about 15% replaced tokens."""
  lengths = rng.integers(6, _SEQ_LEN + 1, size=_BATCH)
  input_mask = (np.arange(_SEQ_LEN)[None, :] < lengths[:, None]).astype(
      np.float32)
  labels = (rng.random((_BATCH, _SEQ_LEN)) < 0.15).astype(np.int32)
  # Informative but imperfect scores, many of them above 0.5 on padding too.
  scores = np.clip(0.35 * labels + rng.normal(0.4, 0.2, labels.shape),
                   0.0, 0.999)
  probabilities = _GRID[np.floor(scores * 199).astype(int)]
  discriminator_logits = np.log(probabilities / (1 - probabilities))
  masked_ids = rng.integers(0, _VOCAB, size=(_BATCH, _SLOTS))
  masked_weights = (rng.random((_BATCH, _SLOTS)) < 0.8).astype(np.float32)
  generator_logits = rng.normal(size=(_BATCH, _SLOTS, _VOCAB)) + 2.0 * (
      np.arange(_VOCAB) == masked_ids[..., None])
  sampled_ids = np.where(rng.random((_BATCH, _SLOTS)) < 0.5, masked_ids,
                         rng.integers(0, _VOCAB, size=(_BATCH, _SLOTS)))
  outputs = {
      "masked_ids": tf.constant(masked_ids, tf.int32),
      "masked_weights": tf.constant(masked_weights),
      "generator_logits": tf.constant(generator_logits, tf.float32),
      "sampled_ids": tf.constant(sampled_ids, tf.int32),
      "replaced_token_labels": tf.constant(labels),
      "discriminator_logits": tf.constant(discriminator_logits, tf.float32),
      "discriminator_weights": tf.constant(input_mask),
  }
  losses = {
      "generator": pretraining_losses.masked_lm_loss(
          outputs["generator_logits"], outputs["masked_ids"], masked_weights),
      "discriminator": pretraining_losses.replaced_token_detection_loss(
          outputs["discriminator_logits"], labels, input_mask),
  }
  losses["loss"] = losses["generator"][0] + 50.0 * losses["discriminator"][0]
  return outputs, losses


def _flat(steps, key):
  return np.concatenate([np.asarray(outputs[key]).reshape(
      -1, *np.asarray(outputs[key]).shape[2:]) for outputs, _ in steps])


def test_two_steps_of_metrics_match_sklearn_on_the_weighted_tokens():
  rng = np.random.default_rng(0)
  steps = [_step(rng), _step(rng)]
  metrics = pretraining_metrics.PretrainingMetrics(
      has_generator=True, has_sampling=True, has_discriminator=True,
      has_main_mlm=False)
  for outputs, losses in steps:
    metrics.update({}, outputs, losses)
  results = {name: float(value) for name, value in metrics.results().items()}

  labels = _flat(steps, "replaced_token_labels")
  weights = _flat(steps, "discriminator_weights")
  probabilities = 1 / (1 + np.exp(-_flat(steps, "discriminator_logits")))
  assert 0 < ((probabilities > 0.5) & (weights == 0)).sum()
  predicted = probabilities > 0.5
  expected = {
      "disc_accuracy": sklearn_metrics.accuracy_score(
          labels, predicted, sample_weight=weights),
      "disc_precision": sklearn_metrics.precision_score(
          labels, predicted, sample_weight=weights),
      "disc_recall": sklearn_metrics.recall_score(
          labels, predicted, sample_weight=weights),
      "disc_auc": sklearn_metrics.roc_auc_score(
          labels, probabilities, sample_weight=weights),
      "disc_loss": sklearn_metrics.log_loss(
          labels, probabilities, sample_weight=weights),
  }
  masked_ids = _flat(steps, "masked_ids")
  slot_weights = _flat(steps, "masked_weights")
  generator_logits = _flat(steps, "generator_logits")
  softmax = np.exp(generator_logits) / np.exp(generator_logits).sum(
      axis=-1, keepdims=True)
  expected.update({
      "masked_lm_accuracy": sklearn_metrics.accuracy_score(
          masked_ids, generator_logits.argmax(axis=-1),
          sample_weight=slot_weights),
      "masked_lm_loss": sklearn_metrics.log_loss(
          masked_ids, softmax, labels=np.arange(_VOCAB),
          sample_weight=slot_weights),
      "sampled_masked_lm_accuracy": sklearn_metrics.accuracy_score(
          masked_ids, _flat(steps, "sampled_ids"), sample_weight=slot_weights),
      "loss": np.mean([float(losses["loss"]) for _, losses in steps]),
  })
  assert set(results) == set(expected)
  for name, value in expected.items():
    assert results[name] == pytest.approx(value, rel=1e-5, abs=1e-6), name
  # The fixed predictions are far from trivial: the checks above have room.
  assert 0.3 < expected["disc_precision"] < 0.8
  assert 0.6 < expected["disc_auc"] < 0.95
