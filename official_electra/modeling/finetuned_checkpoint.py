"""A fine-tuned seed folder, whatever its task family: its files and its one
description.

`official_electra.finetune` writes one per task and seed
(`<model_dir>/<TASK>/seed_<s>/`); the Python API's `save_classifier` writes
the same for a classifier trained in the user's own code. It holds:
  checkpoint/classifier.*  `tf.train.Checkpoint(classifier=<model>)`; the
                           model's encoder at `classifier/encoder`, so
                           `checkpoints.restore_discriminator` (and a second
                           fine-tuning) reads it as a discriminator
  model_config.json        the encoder, special-token ids, case, sequence
                           length, and the `finetuned` section: the head
                           (`family`: `classification` or `span_extraction`,
                           the task, the family's settings), the
                           vocabulary's file name, sha256 and case, the
                           checkpoint's prefix
  vocab.txt                the vocabulary fine-tuning tokenized with
  eval_results.json        the seed's dev metrics

(Until the SQuAD family, a second file, `finetuned_model.json`, described a
classifier's head; as the other pre-`model_config.json` descriptions, it is
no longer read: fine-tune again.)
"""

import os

import tensorflow as tf

from official_electra import files
from official_electra.modeling import errors
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling import pretrained

EVAL_RESULTS_FILE = "eval_results.json"
CHECKPOINT_PREFIX = os.path.join("checkpoint", "classifier")
VOCAB_FILE = "vocab.txt"
CLASSIFICATION = "classification"
SPAN_EXTRACTION = "span_extraction"


class FinetunedCheckpointError(errors.CheckpointError):
  """A seed folder that is incomplete or does not fit its own description."""


def _recorded_description(folder):
  """The `finetuned` section of the folder's model_config.json, or None."""
  if not tf.io.gfile.exists(os.path.join(folder,
                                         model_config_lib.MODEL_CONFIG_FILE)):
    return None
  return model_config_lib.read_model_config(folder).finetuned


def is_seed_folder(folder: str) -> bool:
  """Whether `folder` is a fine-tuned seed folder (of any family)."""
  try:
    return _recorded_description(folder) is not None
  except model_config_lib.ModelConfigError:
    return False


def read_description(run_dir: str) -> dict:
  """The head's description of a seed folder, with its `family`.

  Raises:
    FinetunedCheckpointError: not a seed folder, or its description is
      unreadable.
  """
  description = _recorded_description(run_dir)
  if description is None:
    raise FinetunedCheckpointError(
        f"{run_dir}: not a fine-tuned seed folder (its "
        f"{model_config_lib.MODEL_CONFIG_FILE} has no finetuned section); pass "
        "a <model_dir>/<TASK>/seed_<s> of official_electra.finetune or a "
        "folder of save_classifier")
  if "family" not in description:
    raise FinetunedCheckpointError(
        f"{os.path.join(run_dir, model_config_lib.MODEL_CONFIG_FILE)}: its "
        "finetuned section names no family; fine-tune again")
  return description


def save_finetuned(model, run_dir: str, tokenizer, max_seq_length: int,
                   description: dict) -> None:
  """Writes a seed folder (the module docstring lists its files).

  Args:
    model: a built fine-tuned Keras model with an `encoder` attribute.
    run_dir: the folder (created; files in it are replaced).
    tokenizer: the `WordpieceTokenizer` the model was trained with.
    max_seq_length: the length raw text is packed to.
    description: the family's description of the head; must hold `family`
      and `task`. The vocabulary's and the checkpoint's fields are added.
  """
  if "family" not in description or "task" not in description:
    raise ValueError("a head description needs family and task, got "
                     f"{sorted(description)}")
  tf.train.Checkpoint(classifier=model).write(
      os.path.join(run_dir, CHECKPOINT_PREFIX))
  files.copy(tokenizer.vocab_file, os.path.join(run_dir, VOCAB_FILE))
  model_config_lib.write_model_config(
      run_dir,
      model_config_lib.ModelConfig(
          discriminator=pretrained.encoder_config_of(model.encoder),
          special_token_ids=tokenizer.special_token_ids(),
          lower_case=tokenizer.lower_case,
          max_seq_length=max_seq_length),
      finetuned=dict(description,
                     max_seq_length=max_seq_length,
                     vocab_file=VOCAB_FILE,
                     vocab_sha256=tokenizer.vocab_sha256,
                     lower_case=tokenizer.lower_case,
                     checkpoint=CHECKPOINT_PREFIX))


def restore(model, run_dir: str, description: dict) -> None:
  """Restores a built model from the seed folder's checkpoint.

  Raises:
    FinetunedCheckpointError: the checkpoint does not fit the model.
  """
  prefix = os.path.join(run_dir, description["checkpoint"])
  try:
    tf.train.Checkpoint(classifier=model).read(
        prefix).assert_existing_objects_matched().expect_partial()
  except (AssertionError, ValueError, tf.errors.NotFoundError) as error:
    raise FinetunedCheckpointError(
        f"{prefix}: cannot restore the fine-tuned model "
        f"({errors.first_line(error)}); the run folder is incomplete or from "
        "another version, fine-tune again") from None
