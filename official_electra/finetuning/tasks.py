"""What fine-tuning needs to know about each GLUE task beyond its file layout.

The recipe (Section 4 of ELECTRA_REFERENCE.md and the original's
`configure_finetuning.py`): 10 epochs for RTE and STS-B, 3 for the rest; MRPC and
STS-B also train on the swapped sentence order; STS-B is a regression. The score
a task's seeds are ranked by is the paper's: Matthews correlation for CoLA,
Spearman correlation for STS-B, accuracy (matched, for MNLI) for the others.
"""

import dataclasses
from typing import Optional, Sequence

import numpy as np

from official_electra.data import glue
from official_electra.finetuning import metrics


@dataclasses.dataclass(frozen=True)
class GlueTask:
  """A GLUE task as fine-tuning sees it.

  Attributes:
    name: the GLUE name, also the task's folder in the GLUE directory.
    labels: label strings in output-unit order; None for regression (STS-B).
    metric_names: keys of `metrics.METRIC_FUNCTIONS` reported on each dev split.
    score_metric: the metric seeds are ranked by (for MNLI: on `dev_matched`).
    num_train_epochs: the recipe's number of epochs.
    train_on_swapped_pairs: whether training also sees (text_b, text_a).
    dev_splits: dev file names; their metric keys carry `dev_metric_suffixes`.
    dev_metric_suffixes: suffix added to metric names per dev split ('' for none).
    test_splits: test file names.
    submission_files: GLUE submission file name per test split.
    is_pair_task: whether examples have a second sentence.
    max_score: a regression task's largest score (STS-B: 5.0); None for
      classification.
  """
  name: str
  labels: Optional[Sequence[str]]
  metric_names: Sequence[str]
  score_metric: str
  num_train_epochs: int
  train_on_swapped_pairs: bool
  dev_splits: Sequence[str]
  dev_metric_suffixes: Sequence[str]
  test_splits: Sequence[str]
  submission_files: Sequence[str]
  is_pair_task: bool
  max_score: Optional[float] = None

  @property
  def is_regression(self) -> bool:
    return self.labels is None

  @property
  def num_outputs(self) -> int:
    """Units of the classification head: 1 for regression, else the label count."""
    return 1 if self.labels is None else len(self.labels)

  def encode_labels(self, examples: Sequence[glue.GlueExample]) -> np.ndarray:
    """Returns int32 class ids `[num_examples]` (float32 scores for STS-B)."""
    if self.is_regression:
      return np.array([example.label for example in examples], dtype=np.float32)
    label_ids = {label: index for index, label in enumerate(self.labels)}
    return np.array([label_ids[example.label] for example in examples],
                    dtype=np.int32)

  def prediction_strings(self, predictions: np.ndarray) -> list[str]:
    """Turns class ids (or scores) `[num_examples]` into GLUE submission strings."""
    if self.is_regression:
      return [f"{score:.3f}" for score in np.asarray(predictions, np.float64)]
    return [self.labels[int(class_id)] for class_id in predictions]

  def compute_metrics(self, dev_split: str, labels: np.ndarray,
                      predictions: np.ndarray) -> dict[str, float]:
    """Every metric of the task on one dev split, keyed `<metric><suffix>`."""
    suffix = self.dev_metric_suffixes[list(self.dev_splits).index(dev_split)]
    return {f"{name}{suffix}": metrics.METRIC_FUNCTIONS[name](labels, predictions)
            for name in self.metric_names}

  @property
  def score_key(self) -> str:
    """The metric key seeds are ranked by."""
    return f"{self.score_metric}{self.dev_metric_suffixes[0]}"


_METRIC_NAMES = {
    "CoLA": ("matthews_corrcoef", "accuracy"),
    "SST-2": ("accuracy",),
    "MRPC": ("f1", "accuracy"),
    "STS-B": ("pearson", "spearman"),
    "QQP": ("f1", "accuracy"),
    "MNLI": ("accuracy",),
    "QNLI": ("accuracy",),
    "RTE": ("accuracy",),
    "WNLI": ("accuracy",),
}
_SCORE_METRIC = {"CoLA": "matthews_corrcoef", "STS-B": "spearman"}
_TEN_EPOCH_TASKS = ("RTE", "STS-B")
_SWAPPED_PAIR_TASKS = ("MRPC", "STS-B")
_SUBMISSION_FILES = {"MNLI": ("MNLI-m.tsv", "MNLI-mm.tsv")}
_DEV_METRIC_SUFFIXES = {"MNLI": ("_matched", "_mismatched")}
# STS-B's similarity scores run from 0 to 5 (the original's `STS` task).
_MAX_SCORES = {"STS-B": 5.0}


def get_task(name: str) -> GlueTask:
  """Returns the GlueTask called `name`; raises glue.GlueDataError if unknown."""
  layout = glue.get_task_layout(name)
  return GlueTask(
      name=name,
      labels=layout.labels,
      metric_names=_METRIC_NAMES[name],
      score_metric=_SCORE_METRIC.get(name, "accuracy"),
      num_train_epochs=10 if name in _TEN_EPOCH_TASKS else 3,
      train_on_swapped_pairs=name in _SWAPPED_PAIR_TASKS,
      dev_splits=tuple(layout.dev_splits),
      dev_metric_suffixes=_DEV_METRIC_SUFFIXES.get(name, ("",)),
      test_splits=tuple(layout.test_splits),
      submission_files=_SUBMISSION_FILES.get(name, (f"{name}.tsv",)),
      is_pair_task=layout.labelled.text_b_column is not None,
      max_score=_MAX_SCORES.get(name))


def resolve_task_names(task_flag: str) -> list[str]:
  """`all` -> every GLUE task; otherwise a comma-separated list, each checked."""
  if task_flag == "all":
    return list(glue.GLUE_TASK_NAMES)
  names = [name.strip() for name in task_flag.split(",") if name.strip()]
  for name in names:
    glue.get_task_layout(name)
  if not names:
    raise glue.GlueDataError("--task is empty; valid tasks: "
                             f"{', '.join(glue.GLUE_TASK_NAMES)} or all")
  return names
