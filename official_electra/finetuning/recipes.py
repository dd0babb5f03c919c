"""Two fine-tuning recipes: the authors' code as it ran, and the paper's text.

`original_code` (the default) is what google-research/electra's
`run_finetuning.py` does, the run behind the dev medians the authors' README
quotes (and `gin/glue/*.gin` repeat):

- the loss is the SUM of the per-example losses over the batch
  (`run_finetuning.FinetuningModel`: `tf.reduce_sum` of the per-example
  losses of `classification_tasks.*.get_prediction_module`), and the gradient
  of that sum has its global norm clipped to 1.0 (`model/optimization.py`,
  `create_optimizer`): 32 times the mean's gradient, so the clip acts far
  more often;
- STS-B trains on its 0-5 similarity scores divided by 5
  (`classification_tasks.RegressionTask._add_features`: `(label - 0) / 5`);
- layer-wise decay gives the top Transformer block `lr * decay**2`
  (`optimization._get_layer_lrs`; `layerwise_decay.py`, rule `original_code`);
- ELECTRA-Small's peak learning rate is 1e-4 (`configure_finetuning.py`'s
  default; Base 1e-4, Large 5e-5 with decay 0.9, as in the paper).

`paper` is the text of Clark et al. (2020), Appendix A, Table 7: raw STS-B
scores, the top block at `lr * decay`, Small at 3e-4, and, where the text is
silent (the loss's reduction), the usual choice: the mean over the batch.

Both use weight decay 0.01 (the code's; Table 7 lists 0), the same warm-up,
schedule, batch, epochs and clipping norm. A recipe only fills the fields of
`trainer.FinetuneHyperparameters` left at None: a binding of the field wins.
"""

import dataclasses

import tf_keras

from official_electra.finetuning import tasks

ORIGINAL_CODE = "original_code"
PAPER = "paper"
DEFAULT_RECIPE = ORIGINAL_CODE
LOSS_REDUCTIONS = ("sum", "mean")


@dataclasses.dataclass(frozen=True)
class Recipe:
  """The fields of `FinetuneHyperparameters` a recipe sets.

  Attributes:
    learning_rate: ELECTRA-Small's peak learning rate (`gin/glue/base.gin`
      and `large.gin` bind theirs, the same in both recipes).
    layerwise_decay_rule: `paper` or `original_code` (`layerwise_decay.py`).
    loss_reduction: `sum` or `mean` of the per-example losses over the
      (global) batch, before the gradient is clipped.
    scale_regression_targets: whether a regression task trains on its scores
      divided by the task's maximum score (STS-B: 5).
  """
  learning_rate: float
  layerwise_decay_rule: str
  loss_reduction: str
  scale_regression_targets: bool


RECIPES = {
    ORIGINAL_CODE: Recipe(learning_rate=1e-4,
                          layerwise_decay_rule="original_code",
                          loss_reduction="sum",
                          scale_regression_targets=True),
    PAPER: Recipe(learning_rate=3e-4,
                  layerwise_decay_rule="paper",
                  loss_reduction="mean",
                  scale_regression_targets=False),
}


def recipe_values(name: str) -> dict:
  """`{field: value}` of the recipe called `name`.

  Raises:
    ValueError: an unknown recipe (the message lists the valid ones).
  """
  if name not in RECIPES:
    raise ValueError(f"unknown fine-tuning recipe {name!r}; valid recipes: "
                     f"{', '.join(RECIPES)}")
  return dataclasses.asdict(RECIPES[name])


def task_loss(task: tasks.GlueTask,
              loss_reduction: str) -> tf_keras.losses.Loss:
  """The task's Keras loss: per-example cross-entropy (squared error for
  regression), summed (`sum`) or averaged (`mean`) over the batch.

  With `sum`, as the original's `run_finetuning.py`, the loss is the sum over
  the batch; under tf.distribute each replica's loss is the sum over its
  examples, so the replicas' gradients add up to the global batch's. With
  `mean`, Keras divides by the global batch size.

  Raises:
    ValueError: an unknown `loss_reduction`.
  """
  if loss_reduction not in LOSS_REDUCTIONS:
    raise ValueError(f"unknown loss_reduction {loss_reduction!r}; valid: "
                     f"{', '.join(LOSS_REDUCTIONS)}")
  # AUTO is the mean over the global batch inside compile/fit.
  reduction = (tf_keras.losses.Reduction.SUM if loss_reduction == "sum"
               else tf_keras.losses.Reduction.AUTO)
  if task.is_regression:
    return tf_keras.losses.MeanSquaredError(reduction=reduction)
  return tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                       reduction=reduction)


def regression_target_divisor(task: tasks.GlueTask,
                              scale_regression_targets: bool) -> float:
  """What the task's training targets are divided by: a regression task's
  maximum score under `scale_regression_targets` (STS-B: 5, as the original's
  `RegressionTask`), else 1."""
  if task.is_regression and scale_regression_targets:
    return task.max_score
  return 1.0


def scale_regression_output(classifier, factor: float):
  """Multiplies an `ElectraClassifier`'s output layer by `factor`, so that a
  model trained on scores / `factor` predicts the scores (exact: the head is
  linear)."""
  output_layer = classifier.classification_head.dense
  output_layer.kernel.assign(output_layer.kernel * factor)
  output_layer.bias.assign(output_layer.bias * factor)
