"""What a fine-tuning run reports: GLUE submission files, the seeds' summary.

Every file is written to a temporary name and renamed, so nothing half-written
looks complete.
"""

import math
import statistics
from typing import Mapping, Sequence

from official_electra import files
from official_electra.modeling import classifier_checkpoint

EVAL_RESULTS_FILE = classifier_checkpoint.EVAL_RESULTS_FILE


def write_submission(path: str, example_ids: Sequence[str],
                     predictions: Sequence[str]) -> None:
  """Writes a GLUE submission file: a header, then `index<TAB>prediction` rows."""
  if len(example_ids) != len(predictions):
    raise ValueError(f"{len(example_ids)} ids but {len(predictions)} predictions")
  rows = ["index\tprediction"]
  rows.extend(f"{example_id}\t{prediction}"
              for example_id, prediction in zip(example_ids, predictions))
  files.write_text(path, "\n".join(rows) + "\n")


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
