"""Loading, fine-tuning, saving and exporting ELECTRA from Python.

Thin public names over the loaders and writers every program uses
(`modeling/pretrained.py`, `modeling/classifier_checkpoint.py`,
`optimization/optimizer_factory.py`, `serving/`); see docs/python_api.md.
"""

import os
from typing import Optional, Sequence

import tensorflow as tf
import tf_keras

from official_electra.modeling import classifier_checkpoint
from official_electra.modeling import finetuned_checkpoint
from official_electra.modeling import pretrained
from official_electra.modeling.models import electra_classifier
from official_electra.modeling.networks import electra_encoder
from official_electra.optimization import optimizer_factory
from official_electra.serving import finetuned_export
from official_electra.serving import pretraining_export

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def load_encoder(path: str, tower: str = "discriminator"
                 ) -> electra_encoder.ElectraEncoder:
  """The pretrained encoder of a checkpoint folder, weights restored.

  The architecture is the one recorded in the folder's `model_config.json`.

  Args:
    path: a pretraining model_dir (`official_electra.train`; its latest
      checkpoint), a checkpoint prefix (`DIR/ckpt-1000`), a fine-tuned seed
      folder (`official_electra.finetune` or `save_classifier`), a converted
      import (`official_electra.convert`) or a folder of `save_encoder`.
    tower: `discriminator` (ELECTRA's kept network) or `generator`.

  Returns:
    A built `ElectraEncoder` (a `tf_keras.Model`). It takes a dict of int32
    `[batch, seq_len]` tensors `input_word_ids`, `input_mask`,
    `input_type_ids` and returns `sequence_output` (float32
    `[batch, seq_len, hidden]`) and `cls_output` (float32 `[batch, hidden]`,
    the `[CLS]` token's final hidden state; ELECTRA has no pooler).

  Raises:
    CheckpointError: the folder is none of the above, lacks the tower, or
      its weights do not fit (one line naming the path and the fix).
  """
  return pretrained.load_encoder(path, tower=tower)


def encoder_inputs(sequence_length: Optional[int] = None) -> dict:
  """`tf_keras.Input`s for an encoder, to build your own head functionally.

  Args:
    sequence_length: the fixed length, or None for any.

  Returns:
    `{name: tf_keras.Input}` of int32 `[batch, sequence_length]` for
    `input_word_ids`, `input_mask` and `input_type_ids`.
  """
  return {name: tf_keras.Input(shape=(sequence_length,), dtype=tf.int32,
                               name=name) for name in INPUT_NAMES}


def finetuning_optimizer(model: tf_keras.Model, learning_rate: float,
                         num_train_steps: int, warmup_proportion: float = 0.1,
                         weight_decay_rate: float = 0.01,
                         layerwise_decay_rate: float = 0.8,
                         layerwise_decay_rule: str = "paper"):
  """The fine-tuning recipe's optimizer for a model on an ELECTRA encoder.

  The original AdamW (no bias correction, eps 1e-6, weight decay except on
  LayerNorm and biases), linear warm-up then linear decay to 0, and
  layer-wise learning-rate decay (Clark et al., 2020, Appendix A): a head
  trains at `learning_rate`, the top Transformer block at
  `learning_rate * layerwise_decay_rate`, each block below one factor less,
  the embeddings least.

  Args:
    model: an `ElectraClassifier`, or any model holding one `ElectraEncoder`
      (its variables named `.../layer_<i>/...` and `.../embeddings/...`).
    learning_rate: peak learning rate (ELECTRA-Small: 1e-4 to 3e-4).
    num_train_steps: optimizer steps of the whole training.
    warmup_proportion: fraction of the steps warming up.
    weight_decay_rate: decoupled weight decay.
    layerwise_decay_rate: 0.8 for Small and Base, 0.9 for Large; 1.0 off.
    layerwise_decay_rule: `paper` or `original_code` (one more factor on
      every encoder variable, as the authors' code).

  Returns:
    A `tf_keras` optimizer for `model.compile`.
  """
  encoders = [module for module in model.submodules
              if isinstance(module, electra_encoder.ElectraEncoder)]
  if isinstance(model, electra_encoder.ElectraEncoder):
    encoders.append(model)
  if len(encoders) != 1:
    raise ValueError(f"the model holds {len(encoders)} ElectraEncoders; "
                     "layer-wise decay needs exactly one")
  return optimizer_factory.create_finetuning_optimizer(
      num_layers=encoders[0].num_layers, peak_learning_rate=learning_rate,
      num_train_steps=num_train_steps, warmup_proportion=warmup_proportion,
      weight_decay_rate=weight_decay_rate,
      layerwise_decay_rate=layerwise_decay_rate,
      layerwise_decay_rule=layerwise_decay_rule)


def save_encoder(encoder: electra_encoder.ElectraEncoder, folder: str,
                 preprocessor) -> str:
  """Saves an encoder (fine-tuned inside your own model, say) as a checkpoint
  folder of the pretraining layout.

  `load_encoder`, `official_electra.finetune --init_checkpoint` and
  `official_electra.export --model_dir` take the folder.

  Args:
    encoder: a built `ElectraEncoder`.
    folder: a new (or empty) folder.
    preprocessor: the `ElectraPreprocessor` of its vocabulary; its
      `sequence_length` is recorded as the default packed length.

  Returns:
    The checkpoint prefix written, `<folder>/ckpt-0`.

  Raises:
    CheckpointError: `folder` is not new.
  """
  return pretrained.save_encoder(encoder, folder, preprocessor.tokenizer,
                                 preprocessor.sequence_length)


def save_classifier(classifier: electra_classifier.ElectraClassifier,
                    folder: str, preprocessor,
                    labels: Optional[Sequence[str]] = None,
                    sentence_pair: bool = False,
                    task_name: str = "custom") -> str:
  """Saves a classifier or regressor as a fine-tuned seed folder.

  The folder is what `official_electra.finetune` writes for each seed:
  `load_classifier`, `load_encoder`, `export_saved_model`,
  `official_electra.export --finetuned_dir` and
  `official_electra.finetune --init_checkpoint` take it.

  Args:
    classifier: a built `ElectraClassifier`.
    folder: a new (or empty) folder.
    preprocessor: the `ElectraPreprocessor` it was trained with.
    labels: label strings in output order (`label` in the export); None
      for a regression (one output, `score` in the export) or `class_<i>`.
    sentence_pair: whether the inputs are sentence pairs (the export then
      takes `sentence1` and `sentence2`).
    task_name: recorded in the folder's model_config.json.

  Returns:
    `folder`.

  Raises:
    CheckpointError: `folder` is not new.
    ValueError: `labels` do not match the classifier's outputs.
  """
  pretrained.check_new_folder(folder)
  if labels is None and classifier.num_outputs > 1:
    labels = [f"class_{index}" for index in range(classifier.num_outputs)]
  if labels is not None and len(labels) != classifier.num_outputs:
    raise ValueError(f"{len(labels)} labels for a classifier of "
                     f"{classifier.num_outputs} outputs")
  classifier_checkpoint.save_classifier(
      classifier, folder, preprocessor.tokenizer,
      preprocessor.sequence_length, task_name, labels, sentence_pair)
  return folder


def load_classifier(folder: str) -> electra_classifier.ElectraClassifier:
  """The `ElectraClassifier` of a fine-tuned seed folder, weights restored.

  Args:
    folder: written by `save_classifier` or `official_electra.finetune`
      (`<model_dir>/<TASK>/seed_<s>`).

  Returns:
    A built `ElectraClassifier`: int32 `[batch, seq_len]` inputs to float32
    `[batch, num_outputs]` logits (scores for a regression).

  Raises:
    CheckpointError: not a seed folder, or incomplete.
  """
  if not classifier_checkpoint.is_classifier_folder(folder):
    raise classifier_checkpoint.ClassifierCheckpointError(
        f"{folder}: not a fine-tuned classifier's folder; pass a folder "
        "written by save_classifier or "
        "a <model_dir>/<TASK>/seed_<s> of official_electra.finetune")
  classifier, _ = classifier_checkpoint.load_classifier(folder)
  return classifier


def export_saved_model(folder: str, export_dir: str,
                       tower: str = "discriminator") -> str:
  """Exports a saved folder as a SavedModel for TF Serving, with raw-text
  signatures (what `python -m official_electra.export` writes).

  A fine-tuned SQuAD seed folder: `serving_default` takes `question` and
  `context` and returns `answer`, `answer_start`, `answer_end` and `score`
  (serving/qa_export.py). A classifier (`save_classifier`, or a fine-tuned
  seed folder): its
  `serving_default` takes `sentence` (or `sentence1`, `sentence2`),
  tf.string `[batch]`, and returns `label` (tf.string `[batch]`),
  `label_id` (int32 `[batch]`) and `probabilities` (float32
  `[batch, num_labels]`), or `score` (float32 `[batch]`) for a regression.
  An encoder (`save_encoder`, a pretraining model_dir or an import): see
  docs/serving.md (`serve_text` returns `sequence_output`, `cls_output`).
  Load it with `import tensorflow_text` first.

  Args:
    folder: the folder to export.
    export_dir: the SavedModel folder to create (a numbered version folder
      such as `models/reviews/1` for TF Serving); it must not exist.
    tower: for a pretraining model_dir or an import, the tower to export:
      `discriminator` or `generator` (`export --tower`); a fine-tuned or
      saved folder exports its own encoder.

  Returns:
    `export_dir`.

  Raises:
    ExportError, PretrainingExportError, CheckpointError,
    UnservableOpsError: one line naming the path and the fix.
  """
  if finetuned_checkpoint.is_seed_folder(folder):
    if tower != "discriminator":
      raise finetuned_export.ExportError(
          f"{folder}: a fine-tuned folder exports its own encoder; pass "
          f"tower={tower!r} with a pretraining model_dir or an import")
    finetuned_export.export_finetuned(folder, export_dir)
  else:
    pretraining_export.export_pretrained(folder, export_dir, tower)
  return os.fspath(export_dir)
