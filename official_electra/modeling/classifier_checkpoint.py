"""A fine-tuned classifier's seed folder: the classifier saved and rebuilt.

The seed folder's files are `finetuned_checkpoint.py`'s (the one layout of
every task family); a classifier's head description (the `finetuned`
section of its model_config.json, family `classification`) holds the task,
`num_outputs`, the head's dropout rate, the label strings (None for a
regression) and whether the inputs are sentence pairs. Export
(`serving/classifier_export.py`) and the Python API read it back;
`checkpoints.restore_discriminator` reads its encoder, so a fine-tuned run
can be fine-tuned again. This module sits in the model tier, under
fine-tuning, serving and the Python API alike.
"""

import tensorflow as tf

from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import finetuned_checkpoint
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling.models import electra_classifier

EVAL_RESULTS_FILE = finetuned_checkpoint.EVAL_RESULTS_FILE
CHECKPOINT_PREFIX = finetuned_checkpoint.CHECKPOINT_PREFIX
VOCAB_FILE = finetuned_checkpoint.VOCAB_FILE
ClassifierCheckpointError = finetuned_checkpoint.FinetunedCheckpointError


def is_classifier_folder(folder: str) -> bool:
  """Whether `folder` is a seed folder of a classifier (or regressor)."""
  return (finetuned_checkpoint.is_seed_folder(folder) and
          finetuned_checkpoint.read_description(folder)["family"] ==
          finetuned_checkpoint.CLASSIFICATION)


def read_description(run_dir: str) -> dict:
  """The classifier's head description of a seed folder.

  Raises:
    ClassifierCheckpointError: not a classifier's seed folder.
  """
  description = finetuned_checkpoint.read_description(run_dir)
  if description["family"] != finetuned_checkpoint.CLASSIFICATION:
    raise ClassifierCheckpointError(
        f"{run_dir}: a fine-tuned {description['family']} model, not a "
        "classifier; pass a classifier's seed folder")
  return description


def build_classifier(config: encoder_config_lib.EncoderConfig,
                     num_outputs: int, dropout_rate: float,
                     gradient_clip_norm=None, encoder=None
                     ) -> electra_classifier.ElectraClassifier:
  """A built `ElectraClassifier` (variables created) on a new encoder of
  `config`, or on `encoder` when given."""
  dummy_inputs = {key: tf.zeros([1, 2], tf.int32) for key in
                  ("input_word_ids", "input_mask", "input_type_ids")}
  if encoder is None:
    encoder = encoder_config_lib.build_encoder(config)
    encoder(dummy_inputs)
  classifier = electra_classifier.ElectraClassifier(
      encoder, num_outputs, dropout_rate=dropout_rate,
      gradient_clip_norm=gradient_clip_norm)
  classifier(dummy_inputs)
  return classifier


def save_classifier(classifier: electra_classifier.ElectraClassifier,
                    run_dir: str, tokenizer, max_seq_length: int,
                    task_name: str, labels, sentence_pair: bool) -> None:
  """Writes a classifier's seed folder (`finetuned_checkpoint.py`).

  Args:
    classifier: a built `ElectraClassifier` on an `ElectraEncoder`.
    run_dir: the folder (created; files in it are replaced).
    tokenizer: the `WordpieceTokenizer` the classifier was trained with.
    max_seq_length: the length raw text is packed to.
    task_name: the task's name (a GLUE name for `official_electra.finetune`).
    labels: the label strings in output order, or None for a regression
      (one output).
    sentence_pair: whether the inputs are sentence pairs.
  """
  finetuned_checkpoint.save_finetuned(
      classifier, run_dir, tokenizer, max_seq_length,
      head_description(classifier, task_name, labels, sentence_pair))


def head_description(classifier, task_name, labels, sentence_pair) -> dict:
  """The head's description a classifier's seed folder records (the
  arguments as `save_classifier`'s)."""
  return {"family": finetuned_checkpoint.CLASSIFICATION,
          "task": task_name,
          "num_outputs": classifier.num_outputs,
          "labels": None if labels is None else list(labels),
          "sentence_pair": bool(sentence_pair),
          "dropout_rate": classifier.dropout_rate}


def load_classifier(run_dir: str, num_outputs=None):
  """`(classifier, description)` of a seed folder, its weights restored.

  Args:
    run_dir: the seed folder.
    num_outputs: units of the task's head; by default the description's.

  Raises:
    ClassifierCheckpointError: the folder is incomplete, inconsistent or
      not a classifier's.
    model_config.ModelConfigError: its model_config.json is missing or
      unreadable.
  """
  description = read_description(run_dir)
  recorded = model_config_lib.require_model_config(
      run_dir, "loading a fine-tuned classifier")
  classifier = build_classifier(
      recorded.model.discriminator,
      num_outputs or description["num_outputs"], description["dropout_rate"])
  finetuned_checkpoint.restore(classifier, run_dir, description)
  return classifier, description
