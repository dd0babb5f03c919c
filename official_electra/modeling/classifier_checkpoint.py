"""A fine-tuned classifier's seed folder: its files, and the classifier rebuilt.

`official_electra.finetune` writes one per task and seed
(`<model_dir>/<TASK>/seed_<s>/`); export (`serving/classifier_export.py`)
reads it back, and `checkpoints.restore_discriminator` reads its encoder, so
a fine-tuned run can be fine-tuned again. It holds:
  checkpoint/classifier.*  `tf.train.Checkpoint(classifier=ElectraClassifier)`
  model_config.json        the encoder, special-token ids, case, sequence length
  finetuned_model.json     the head: task, num_outputs, dropout rate, the
                           vocabulary's file name, sha256 and case, and
                           (since the Python API) the label strings and
                           whether the inputs are sentence pairs
  vocab.txt                the vocabulary fine-tuning tokenized with
  eval_results.json        the seed's dev metrics

`official_electra.save_classifier` writes the same folder for a classifier
trained in the user's own Keras code. Readers need nothing of the fine-tuning
procedure: this module sits in the model tier, under fine-tuning, serving and
the Python API alike.
"""

import os

import tensorflow as tf

from official_electra import files
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import errors
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling import pretrained
from official_electra.modeling.models import electra_classifier

FINETUNED_MODEL_FILE = "finetuned_model.json"
EVAL_RESULTS_FILE = "eval_results.json"
CHECKPOINT_PREFIX = os.path.join("checkpoint", "classifier")
VOCAB_FILE = "vocab.txt"


class ClassifierCheckpointError(errors.CheckpointError):
  """A seed folder that is incomplete or does not fit its own description."""


def is_seed_folder(folder: str) -> bool:
  return tf.io.gfile.exists(os.path.join(folder, FINETUNED_MODEL_FILE))


def read_description(run_dir: str) -> dict:
  """`finetuned_model.json` of a seed folder."""
  path = os.path.join(run_dir, FINETUNED_MODEL_FILE)
  try:
    return files.read_json(path)
  except (OSError, ValueError) as error:
    raise ClassifierCheckpointError(
        f"{path}: unreadable ({errors.first_line(error)}); pass a seed folder "
        "written by official_electra.finetune") from None


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
  """Writes a seed folder: the checkpoint and what export needs to rebuild
  and tokenize (the module docstring lists the files).

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
  tf.train.Checkpoint(classifier=classifier).write(
      os.path.join(run_dir, CHECKPOINT_PREFIX))
  files.copy(tokenizer.vocab_file, os.path.join(run_dir, VOCAB_FILE))
  model_config_lib.write_model_config(run_dir, model_config_lib.ModelConfig(
      discriminator=pretrained.encoder_config_of(classifier.encoder),
      special_token_ids=tokenizer.special_token_ids(),
      lower_case=tokenizer.lower_case,
      max_seq_length=max_seq_length))
  files.write_json(os.path.join(run_dir, FINETUNED_MODEL_FILE), {
      "task": task_name,
      "num_outputs": classifier.num_outputs,
      "labels": None if labels is None else list(labels),
      "sentence_pair": bool(sentence_pair),
      "dropout_rate": classifier.dropout_rate,
      "max_seq_length": max_seq_length,
      "vocab_file": VOCAB_FILE,
      "vocab_sha256": tokenizer.vocab_sha256,
      "lower_case": tokenizer.lower_case,
      "checkpoint": CHECKPOINT_PREFIX,
  })


def load_classifier(run_dir: str, num_outputs=None):
  """`(classifier, description)` of a seed folder, its weights restored.

  Args:
    run_dir: the seed folder.
    num_outputs: units of the task's head; by default the description's.

  Raises:
    ClassifierCheckpointError: the folder is incomplete or inconsistent.
    model_config.ModelConfigError: its model_config.json is missing or
      unreadable.
  """
  description = read_description(run_dir)
  recorded = model_config_lib.require_model_config(
      run_dir, "loading a fine-tuned classifier")
  classifier = build_classifier(
      recorded.model.discriminator,
      num_outputs or description["num_outputs"], description["dropout_rate"])
  prefix = os.path.join(run_dir, description["checkpoint"])
  try:
    tf.train.Checkpoint(classifier=classifier).read(
        prefix).assert_existing_objects_matched().expect_partial()
  except (AssertionError, ValueError, tf.errors.NotFoundError) as error:
    raise ClassifierCheckpointError(
        f"{prefix}: cannot restore the classifier ({errors.first_line(error)});"
        " the run folder is incomplete or from another version, fine-tune "
        "again") from None
  return classifier, description
