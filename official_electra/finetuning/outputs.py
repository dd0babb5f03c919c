"""Files a fine-tuning run writes: results JSON, GLUE submission files, model config.

Every file is written to a temporary name and renamed, so nothing half-written
looks complete.
"""

import json
import math
import os
import statistics
from typing import Mapping, Sequence

import tensorflow as tf

EVAL_RESULTS_FILE = "eval_results.json"
FINETUNED_MODEL_FILE = "finetuned_model.json"


def write_text_atomically(path: str, text: str) -> None:
  """Writes `text` to `path` through a temporary file and a rename."""
  tf.io.gfile.makedirs(os.path.dirname(path) or ".")
  temporary_path = f"{path}.tmp"
  with tf.io.gfile.GFile(temporary_path, "w") as output_file:
    output_file.write(text)
  tf.io.gfile.rename(temporary_path, path, overwrite=True)


def _nan_to_none(value):
  """Standard JSON has no NaN (e.g. a correlation of constant predictions)."""
  if isinstance(value, float) and math.isnan(value):
    return None
  if isinstance(value, dict):
    return {key: _nan_to_none(item) for key, item in value.items()}
  if isinstance(value, (list, tuple)):
    return [_nan_to_none(item) for item in value]
  return value


def write_json(path: str, value) -> None:
  """Writes `value` as indented JSON; NaN becomes null."""
  write_text_atomically(
      path, json.dumps(_nan_to_none(value), indent=2, sort_keys=True,
                       allow_nan=False) + "\n")


def read_json(path: str):
  with tf.io.gfile.GFile(path) as json_file:
    return json.load(json_file)


def write_submission(path: str, example_ids: Sequence[str],
                     predictions: Sequence[str]) -> None:
  """Writes a GLUE submission file: a header, then `index<TAB>prediction` rows."""
  if len(example_ids) != len(predictions):
    raise ValueError(f"{len(example_ids)} ids but {len(predictions)} predictions")
  rows = ["index\tprediction"]
  rows.extend(f"{example_id}\t{prediction}"
              for example_id, prediction in zip(example_ids, predictions))
  write_text_atomically(path, "\n".join(rows) + "\n")


def summarize_seeds(seed_metrics: Mapping[int, Mapping[str, float]],
                    score_key: str) -> dict:
  """Per-seed metrics, the median of each metric, and the seed to submit.

  Args:
    seed_metrics: `{seed: {metric_key: value}}`, every seed with the same keys.
    score_key: the metric that ranks seeds.

  Returns:
    `{"seeds": {str(seed): metrics}, "median": {metric_key: median},
    "score_key": score_key, "selected_seed": seed}` where the selected seed is
    the one whose score is the (lower) median, so its test predictions stand for
    the reported median.
  """
  if not seed_metrics:
    raise ValueError("no seeds to summarize")
  # A metric read back from JSON as null (NaN when written) counts as NaN.
  seed_metrics = {seed: {key: math.nan if value is None else value
                         for key, value in metrics.items()}
                  for seed, metrics in seed_metrics.items()}
  metric_keys = sorted(next(iter(seed_metrics.values())))
  median = {key: statistics.median(metrics[key] for metrics in seed_metrics.values())
            for key in metric_keys}
  ranked_seeds = sorted(seed_metrics, key=lambda seed: seed_metrics[seed][score_key])
  selected_seed = ranked_seeds[(len(ranked_seeds) - 1) // 2]
  return {"seeds": {str(seed): dict(metrics)
                    for seed, metrics in sorted(seed_metrics.items())},
          "median": median,
          "score_key": score_key,
          "selected_seed": selected_seed}
