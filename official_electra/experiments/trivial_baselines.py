"""Trivial baselines on the study's GLUE tasks, from the same files.

    python -m official_electra.experiments.trivial_baselines \
      --glue_dir=../shared/data/glue --tasks=MRPC,STS-B,CoLA,SST-2 \
      [--output_file=baselines.json]

What a score of the study means depends on what needs no encoder at all, so
the study's reports put these beside every task's row. Each is fitted on the
task's `train.tsv` (or needs no fitting) and scored on its `dev.tsv` by the
task's own metrics (`tasks.GlueTask.compute_metrics`, `finetuning/metrics.py`):

- majority class (classification tasks): the training set's most frequent
  label for every dev example (MCC 0 by construction; MRPC's F1 is that of
  always answering "paraphrase");
- word overlap (STS-B, and the binary pair tasks such as MRPC): the Jaccard
  similarity of the two sentences' sets of words; for STS-B it is the
  prediction itself (no training: Spearman and Pearson), for a pair task the
  threshold above which a pair is positive is the one with the best
  training accuracy;
- bag-of-words logistic regression (binary single-sentence tasks: SST-2,
  CoLA): a word-presence feature per training word, L2-penalised
  (`l2_penalty` 1, scikit-learn's default C = 1), fitted exactly by Newton's
  method with conjugate gradients (`fit_logistic_regression`, NumPy only).

Words are the lower-cased runs of letters, digits and underscores
(`\\w+`). Nothing is tuned on a dev set.
"""

import collections
import re

from absl import app
from absl import flags
import numpy as np

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra.data import glue
from official_electra.finetuning import tasks as tasks_lib

MAJORITY = "majority class"
WORD_OVERLAP = "word overlap (Jaccard)"
BAG_OF_WORDS = "bag-of-words logistic regression"
BASELINES = (MAJORITY, WORD_OVERLAP, BAG_OF_WORDS)
SCORE_KEY = "score"

_WORD = re.compile(r"\w+")


def words(text):
  """The lower-cased words of `text`."""
  return _WORD.findall(text.lower())


def jaccard(text_a, text_b):
  """|A & B| / |A | B| of the two texts' sets of words (0 when both are
  empty)."""
  a, b = set(words(text_a)), set(words(text_b))
  union = a | b
  return len(a & b) / len(union) if union else 0.0


def _label_ids(task, examples):
  return np.array([task.labels.index(example.label) for example in examples])


def _metrics(task, labels, predictions):
  """The task's dev metrics, with its score metric also as `score`."""
  metrics = task.compute_metrics(task.dev_splits[0], labels, predictions)
  return dict(metrics, **{SCORE_KEY: metrics[task.score_key]})


def majority_class(task, train, dev):
  """The training set's most frequent label for every dev example."""
  counts = collections.Counter(_label_ids(task, train).tolist())
  majority = max(sorted(counts), key=counts.__getitem__)
  dev_labels = _label_ids(task, dev)
  return _metrics(task, dev_labels, np.full_like(dev_labels, majority))


def best_threshold(similarities, labels):
  """The threshold `t` that classifies `similarity >= t` as positive with the
  best accuracy on these examples (the smallest such `t` among the values
  seen, and one above them all for "never positive")."""
  similarities = np.asarray(similarities, dtype=np.float64)
  labels = np.asarray(labels)
  candidates = np.append(np.unique(similarities), np.inf)
  accuracies = [np.mean((similarities >= threshold) == (labels == 1))
                for threshold in candidates]
  return float(candidates[int(np.argmax(accuracies))])


def word_overlap(task, train, dev):
  """Jaccard overlap: the prediction itself for a regression task, else
  thresholded at the best training accuracy."""
  dev_overlap = [jaccard(example.text_a, example.text_b) for example in dev]
  if task.labels is None:
    return _metrics(task, [example.label for example in dev], dev_overlap)
  threshold = best_threshold(
      [jaccard(example.text_a, example.text_b) for example in train],
      _label_ids(task, train))
  predictions = (np.asarray(dev_overlap) >= threshold).astype(np.int64)
  return dict(_metrics(task, _label_ids(task, dev), predictions),
              threshold=threshold)


class WordFeatures:
  """Sparse word-presence features: one column per word of the texts it was
  built from; other words are dropped."""

  def __init__(self, texts):
    vocabulary = sorted({word for text in texts for word in words(text)})
    self.columns = {word: index for index, word in enumerate(vocabulary)}

  def transform(self, texts):
    """`(rows, columns, num_rows)`: the (example, word) pairs present."""
    rows, columns = [], []
    for row, text in enumerate(texts):
      present = sorted({self.columns[word] for word in words(text)
                        if word in self.columns})
      rows += [row] * len(present)
      columns += present
    return (np.array(rows, dtype=np.int64), np.array(columns, dtype=np.int64),
            len(texts))


def _times(features, weights):
  """X @ weights for sparse binary X."""
  rows, columns, num_rows = features
  return np.bincount(rows, weights=weights[columns], minlength=num_rows)


def _transposed_times(features, values, num_columns):
  """X.T @ values for sparse binary X."""
  rows, columns, _ = features
  return np.bincount(columns, weights=values[rows], minlength=num_columns)


def fit_logistic_regression(features, labels, num_columns, l2_penalty=1.0,
                            tolerance=1e-10, max_iterations=100):
  """Minimises sum_i log(1 + exp(-y_i (x_i.w + b))) + l2_penalty/2 |w|^2.

  The objective of scikit-learn's `LogisticRegression(C=1 / l2_penalty)`
  (the intercept is not penalised), minimised by Newton's method: each step
  solves the Newton system by conjugate gradients on Hessian-vector
  products (the Hessian of a large vocabulary is never formed), then
  halves the step until the objective falls enough (Armijo).

  Args:
    features: `(rows, columns, num_rows)` of binary features
      (`WordFeatures.transform`).
    labels: 0/1 per row.
    num_columns: the number of features.
    l2_penalty: the penalty on the weights, > 0.
    tolerance: stop when the gradient's largest entry is below this times
      the number of rows.
    max_iterations: Newton steps at most.

  Returns:
    `(weights [num_columns], bias)`.
  """
  targets = np.asarray(labels, dtype=np.float64)
  signs = 2.0 * targets - 1.0
  parameters = np.zeros(num_columns + 1)

  def margins(parameters):
    return _times(features, parameters[:-1]) + parameters[-1]

  def objective(parameters):
    return (np.sum(np.logaddexp(0.0, -signs * margins(parameters)))
            + 0.5 * l2_penalty * parameters[:-1] @ parameters[:-1])

  for _ in range(max_iterations):
    probabilities = 1.0 / (1.0 + np.exp(-margins(parameters)))
    residuals = probabilities - targets
    gradient = np.append(
        _transposed_times(features, residuals, num_columns)
        + l2_penalty * parameters[:-1], residuals.sum())
    if np.max(np.abs(gradient)) < tolerance * len(targets):
      break
    curvature = probabilities * (1.0 - probabilities)

    def hessian_times(vector, curvature=curvature):
      scaled = curvature * (_times(features, vector[:-1]) + vector[-1])
      return np.append(
          _transposed_times(features, scaled, num_columns)
          + l2_penalty * vector[:-1], scaled.sum())

    # Truncated Newton: a looser solve far from the optimum, tighter near.
    step = _conjugate_gradients(
        hessian_times, -gradient,
        min(0.5, np.sqrt(np.linalg.norm(gradient))))
    size, current = 1.0, objective(parameters)
    while (objective(parameters + size * step)
           > current + 1e-4 * size * gradient @ step and size > 1e-10):
      size /= 2
    parameters = parameters + size * step
  return parameters[:-1], float(parameters[-1])


def _conjugate_gradients(matrix_times, target, relative_residual,
                         max_steps=500):
  """Solves `A x = target` for a symmetric positive definite `A` given as
  `matrix_times(x)`, to `relative_residual` (or `max_steps`)."""
  solution = np.zeros_like(target)
  residual = target.copy()
  direction = residual.copy()
  squared = residual @ residual
  stop = relative_residual**2 * squared
  for _ in range(max_steps):
    if squared <= stop:
      break
    image = matrix_times(direction)
    length = squared / (direction @ image)
    solution += length * direction
    residual -= length * image
    new_squared = residual @ residual
    direction = residual + (new_squared / squared) * direction
    squared = new_squared
  return solution


def bag_of_words(task, train, dev):
  """Bag-of-words logistic regression fitted on train, scored on dev."""
  featurizer = WordFeatures([example.text_a for example in train])
  num_columns = len(featurizer.columns)
  weights, bias = fit_logistic_regression(
      featurizer.transform([example.text_a for example in train]),
      _label_ids(task, train), num_columns)
  margins = _times(featurizer.transform([example.text_a for example in dev]),
                   weights) + bias
  return dict(_metrics(task, _label_ids(task, dev),
                       (margins > 0).astype(np.int64)),
              words=num_columns)


def applicable(task):
  """The baselines that apply to `task` (a `tasks.GlueTask`)."""
  binary = task.labels is not None and len(task.labels) == 2
  names = [] if task.labels is None else [MAJORITY]
  if task.is_pair_task and (binary or task.labels is None):
    names.append(WORD_OVERLAP)
  if binary and not task.is_pair_task:
    names.append(BAG_OF_WORDS)
  return names


_FUNCTIONS = {MAJORITY: majority_class, WORD_OVERLAP: word_overlap,
              BAG_OF_WORDS: bag_of_words}


def task_baselines(glue_dir, task_names):
  """`{task: {baseline: {metric: value, "score": the task's score metric,
  ...}}}` for the baselines that apply to each task (`applicable`).

  Raises:
    glue.GlueDataError: a missing or malformed train or dev file.
  """
  results = {}
  for name in task_names:
    task = tasks_lib.get_task(name)
    train = glue.read_split(glue_dir, name, "train")
    dev = glue.read_split(glue_dir, name, task.dev_splits[0])
    results[name] = {baseline: _FUNCTIONS[baseline](task, train, dev)
                     for baseline in applicable(task)}
  return results


def score_rows(baselines, task_names):
  """`[(baseline, {task: score or None})]` for a report's per-task table,
  for the baselines any of `task_names` has."""
  present = [name for name in BASELINES
             if any(name in baselines.get(task, {}) for task in task_names)]
  return [(name, {task: baselines.get(task, {}).get(name, {}).get(SCORE_KEY)
                  for task in task_names}) for name in present]


def format_table(baselines, task_names):
  """Every baseline's dev metrics per task (x 100) as markdown."""
  lines = ["Trivial baselines on the same dev sets (x 100; fitted on the "
           "training set or not fitted; no encoder):", "",
           "| task | baseline | dev metrics |", "|---|---|---|"]
  for task in task_names:
    for name, metrics in baselines.get(task, {}).items():
      shown = ", ".join(
          f"{metric} {100 * value:.1f}" for metric, value in metrics.items()
          if metric not in (SCORE_KEY, "threshold", "words"))
      if "threshold" in metrics:
        shown += f" (threshold {metrics['threshold']:.3f}, chosen on train)"
      lines.append(f"| {task} | {name} | {shown} |")
  return "\n".join(lines)


def _define_flags():
  """The command's flags (defined only when it runs, so the module imports
  beside the other programs)."""
  flags.DEFINE_string("glue_dir", None, "GLUE data folder (one sub-folder "
                      "per task).")
  flags.DEFINE_list("tasks", ["MRPC", "STS-B", "CoLA", "SST-2"], "Tasks.")
  flags.DEFINE_string("output_file", None, "Also write the baselines here "
                      "as JSON.")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


def main(argv):
  del argv
  try:
    if not flags.FLAGS.glue_dir:
      raise glue.GlueDataError("pass --glue_dir pointing at the GLUE data")
    baselines = task_baselines(flags.FLAGS.glue_dir, flags.FLAGS.tasks)
    if flags.FLAGS.output_file:
      files.write_json(flags.FLAGS.output_file, baselines)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)
  print(format_table(baselines, flags.FLAGS.tasks))


if __name__ == "__main__":
  _define_flags()
  app.run(main)
