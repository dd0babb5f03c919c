"""GLUE's official metrics, computed exactly in NumPy.

Each function takes 1-D arrays of true labels and predictions of equal length.
Class metrics take integer class ids (binary tasks: 1 is the positive class);
correlations take floats. The definitions match scikit-learn's
`accuracy_score`, `f1_score`, `matthews_corrcoef` and SciPy's `pearsonr` and
`spearmanr` (average ranks for ties), which the tests use as references.
"""

import numpy as np


def _as_pair(labels, predictions, dtype):
  labels = np.asarray(labels, dtype=dtype).reshape(-1)
  predictions = np.asarray(predictions, dtype=dtype).reshape(-1)
  if labels.shape != predictions.shape:
    raise ValueError(f"labels ({labels.size}) and predictions "
                     f"({predictions.size}) differ in length")
  if labels.size == 0:
    raise ValueError("metrics need at least one example")
  return labels, predictions


def accuracy(labels, predictions) -> float:
  """Fraction of predictions equal to the label."""
  labels, predictions = _as_pair(labels, predictions, np.int64)
  return float(np.mean(labels == predictions))


def f1_score(labels, predictions) -> float:
  """F1 of the positive class 1 (MRPC, QQP); 0.0 when there is no true positive."""
  labels, predictions = _as_pair(labels, predictions, np.int64)
  true_positives = np.sum((predictions == 1) & (labels == 1))
  if true_positives == 0:
    return 0.0
  precision = true_positives / np.sum(predictions == 1)
  recall = true_positives / np.sum(labels == 1)
  return float(2 * precision * recall / (precision + recall))


def matthews_correlation(labels, predictions) -> float:
  """Matthews correlation coefficient (CoLA), multi-class form; 0.0 if undefined."""
  labels, predictions = _as_pair(labels, predictions, np.int64)
  classes, encoded = np.unique(np.concatenate([labels, predictions]),
                               return_inverse=True)
  num_classes = classes.size
  confusion = np.zeros((num_classes, num_classes), dtype=np.float64)
  np.add.at(confusion, (encoded[:labels.size], encoded[labels.size:]), 1)
  true_counts = confusion.sum(axis=1)
  predicted_counts = confusion.sum(axis=0)
  correct = np.trace(confusion)
  total = confusion.sum()
  covariance = correct * total - np.dot(true_counts, predicted_counts)
  predicted_spread = total**2 - np.dot(predicted_counts, predicted_counts)
  true_spread = total**2 - np.dot(true_counts, true_counts)
  if predicted_spread * true_spread == 0:
    return 0.0
  return float(covariance / np.sqrt(predicted_spread * true_spread))


def pearson_correlation(labels, predictions) -> float:
  """Pearson's r (STS-B); NaN when either input is constant."""
  labels, predictions = _as_pair(labels, predictions, np.float64)
  labels_centred = labels - labels.mean()
  predictions_centred = predictions - predictions.mean()
  norm = np.linalg.norm(labels_centred) * np.linalg.norm(predictions_centred)
  if norm == 0:
    return float("nan")
  return float(np.clip(np.dot(labels_centred, predictions_centred) / norm,
                       -1.0, 1.0))


def _average_ranks(values):
  """Ranks starting at 1, ties sharing the mean of the ranks they span."""
  order = np.argsort(values, kind="mergesort")
  sorted_values = values[order]
  starts_new_group = np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]])
  group_ids = np.cumsum(starts_new_group) - 1
  group_starts = np.flatnonzero(starts_new_group)
  group_ends = np.append(group_starts[1:], values.size)
  mean_rank_of_group = (group_starts + 1 + group_ends) / 2.0
  ranks = np.empty(values.size, dtype=np.float64)
  ranks[order] = mean_rank_of_group[group_ids]
  return ranks


def spearman_correlation(labels, predictions) -> float:
  """Spearman's rho (STS-B): Pearson's r of the average ranks."""
  labels, predictions = _as_pair(labels, predictions, np.float64)
  return pearson_correlation(_average_ranks(labels), _average_ranks(predictions))


METRIC_FUNCTIONS = {
    "accuracy": accuracy,
    "f1": f1_score,
    "matthews_corrcoef": matthews_correlation,
    "pearson": pearson_correlation,
    "spearman": spearman_correlation,
}
