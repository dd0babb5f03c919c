"""The GLUE metrics agree with scikit-learn and SciPy (test-only references)."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sklearn_metrics

from official_electra.finetuning import metrics

_RNG = np.random.default_rng(1234)
_BINARY_LABELS = _RNG.integers(0, 2, size=500)
_BINARY_PREDICTIONS = np.where(_RNG.random(500) < 0.7, _BINARY_LABELS,
                               1 - _BINARY_LABELS)
_THREE_CLASS_LABELS = _RNG.integers(0, 3, size=400)
_THREE_CLASS_PREDICTIONS = np.where(_RNG.random(400) < 0.6, _THREE_CLASS_LABELS,
                                    _RNG.integers(0, 3, size=400))
# STS-B-like scores: many ties in the gold scores, continuous predictions.
_SCORES = np.round(_RNG.uniform(0, 5, size=300) * 5) / 5
_SCORE_PREDICTIONS = _SCORES + _RNG.normal(0, 1.0, size=300)


def test_accuracy_matches_sklearn():
  for labels, predictions in [(_BINARY_LABELS, _BINARY_PREDICTIONS),
                              (_THREE_CLASS_LABELS, _THREE_CLASS_PREDICTIONS)]:
    assert metrics.accuracy(labels, predictions) == pytest.approx(
        sklearn_metrics.accuracy_score(labels, predictions), abs=1e-12)


def test_f1_matches_sklearn():
  assert metrics.f1_score(_BINARY_LABELS, _BINARY_PREDICTIONS) == pytest.approx(
      sklearn_metrics.f1_score(_BINARY_LABELS, _BINARY_PREDICTIONS), abs=1e-12)
  assert metrics.f1_score([0, 1, 1], [0, 0, 0]) == 0.0


@pytest.mark.parametrize("labels, predictions", [
    (_BINARY_LABELS, _BINARY_PREDICTIONS),
    (_THREE_CLASS_LABELS, _THREE_CLASS_PREDICTIONS),
    ([1, 1, 0, 0], [0, 0, 1, 1]),
])
def test_matthews_matches_sklearn(labels, predictions):
  assert metrics.matthews_correlation(labels, predictions) == pytest.approx(
      sklearn_metrics.matthews_corrcoef(labels, predictions), abs=1e-12)


def test_matthews_of_constant_predictions_is_zero():
  assert metrics.matthews_correlation([0, 1, 1, 0], [1, 1, 1, 1]) == 0.0
  assert sklearn_metrics.matthews_corrcoef([0, 1, 1, 0], [1, 1, 1, 1]) == 0.0


def test_pearson_and_spearman_match_scipy():
  assert metrics.pearson_correlation(_SCORES, _SCORE_PREDICTIONS) == (
      pytest.approx(stats.pearsonr(_SCORES, _SCORE_PREDICTIONS)[0], abs=1e-12))
  assert metrics.spearman_correlation(_SCORES, _SCORE_PREDICTIONS) == (
      pytest.approx(stats.spearmanr(_SCORES, _SCORE_PREDICTIONS)[0], abs=1e-12))
  tied_predictions = np.round(_SCORE_PREDICTIONS)
  assert metrics.spearman_correlation(_SCORES, tied_predictions) == (
      pytest.approx(stats.spearmanr(_SCORES, tied_predictions)[0], abs=1e-12))


def test_length_mismatch_is_an_error():
  with pytest.raises(ValueError, match="differ in length"):
    metrics.accuracy([0, 1], [0])
