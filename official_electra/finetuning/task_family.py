"""The interface between the fine-tuning seed loop and a family of tasks.

`trainer.py` runs seeds (resume, SIGTERM, layer-wise decay, the recipes'
optimizer, per-epoch dev metrics, the seed folder, medians over seeds)
without knowing which task it trains. Everything task-specific sits behind a
`TaskFamily`:

    encode          read the task's files once: training inputs and labels,
                    the dev (and test) data in the family's own form
    build_model     a built Keras model on the given encoder, with its head
    compile_model   its loss and metrics, on the seed loop's optimizer
    evaluate        dev metrics `{key: value}` for the current weights
    finish_training undo a training-only transform of the weights (STS-B)
    write_predictions  the run's prediction files (GLUE submission files,
                    SQuAD's predictions.json)
    describe        the head, recorded in the seed folder's model_config.json

Families: GLUE classification and regression (`glue_family.py`, the head
`layers/classification_head.py`, data `data/glue.py`) and SQuAD span
extraction (`squad_family.py`, `layers/span_heads.py`, `data/squad.py`).
A new family is one data module, one task module and one head.
"""

import abc
import dataclasses
from typing import Any

import numpy as np
import tf_keras


@dataclasses.dataclass
class EncodedTask:
  """What the seed loop reads of a task's encoded data; families subclass it
  to hold their dev and test data.

  Attributes:
    train_features: int32 arrays `[n, max_seq_length]` (`input_word_ids`,
      `input_mask`, `input_type_ids`), the rows training batches are cut from.
    train_labels: `[n]` array, or a dict of `[n]` arrays, the targets `fit`
      reads beside the features.
  """
  train_features: dict
  train_labels: Any

  @property
  def num_train_examples(self) -> int:
    return len(next(iter(self.train_features.values())))


class TaskFamily(abc.ABC):
  """One fine-tuning task, as the seed loop (`trainer.py`) drives it.

  Attributes:
    name: the task's name: the folder of its seeds in the model_dir.
    score_key: the dev metric seeds are ranked by (their median is reported).
    num_train_epochs: the recipe's epochs when the hyperparameters set none.
    submission_files: file names the run writes under `<run_dir>/predictions/`
      that the median seed's copy stands for (copied to
      `<model_dir>/submission/`).
  """
  name: str
  score_key: str
  num_train_epochs: int
  submission_files: tuple = ()

  @abc.abstractmethod
  def encode(self, tokenizer, hyperparameters, with_test: bool) -> EncodedTask:
    """Reads and encodes the task's files (raises a `UserError` subclass for
    missing or malformed ones)."""

  @abc.abstractmethod
  def build_model(self, encoder, hyperparameters) -> tf_keras.Model:
    """A built model (variables created) with this family's head on `encoder`;
    its `encoder` attribute is `encoder` (so the seed folder's checkpoint
    holds it at `classifier/encoder`)."""

  @abc.abstractmethod
  def compile_model(self, model, optimizer, hyperparameters) -> None:
    """`model.compile` with the family's loss and metrics."""

  def training_labels(self, encoded: EncodedTask, hyperparameters):
    """The targets `fit` trains on (by default the encoded labels)."""
    del hyperparameters
    return encoded.train_labels

  @abc.abstractmethod
  def evaluate(self, model, encoded: EncodedTask,
               hyperparameters) -> dict[str, float]:
    """Every dev metric, `{key: value}`, for the model's current weights."""

  def finish_training(self, model, hyperparameters) -> None:
    """Called once after training, before predictions and the save."""
    del model, hyperparameters

  @abc.abstractmethod
  def write_predictions(self, model, encoded: EncodedTask, hyperparameters,
                        run_dir: str) -> None:
    """Writes the run's prediction files under `run_dir`."""

  @abc.abstractmethod
  def describe(self, model, hyperparameters) -> dict:
    """The head and how to feed it: the `finetuned` section of the seed
    folder's model_config.json (`finetuned_checkpoint.py`)."""


def rows(values, order):
  """`values` (an array or a dict of arrays) at the row indices `order`."""
  if isinstance(values, dict):
    return {key: value[order] for key, value in values.items()}
  return np.asarray(values)[order]
