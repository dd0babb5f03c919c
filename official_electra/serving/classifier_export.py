"""A TF Serving SavedModel of a fine-tuned classifier (GLUE's, or one saved by
`official_electra.save_classifier`).

Two signatures:
  `serving_default`: raw text. Single-sentence tasks take `sentence`, pair tasks
    `sentence1` and `sentence2` (tf.string `[batch]`); the project's tokenizer
    and core-TF packer run in the graph (packed to the fine-tuning
    `max_seq_length`, then cut to the request's longest sequence:
    `request_length`).
  `serve_token_ids`: `input_word_ids`, `input_mask`, `input_type_ids` (int32
    `[batch, seq_len]`), as packed by `WordpieceTokenizer.pack_inputs`.
Both return, for classification, `label` (tf.string `[batch]`, the label
strings: GLUE's, or those recorded by `save_classifier`), `label_id` (int32
`[batch]`) and `probabilities` (float32 `[batch, num_labels]`); for a
regression (STS-B), `score` (float32 `[batch]`).

The export is written to a temporary folder, checked with
`op_allowlist.check_serving_op_types` (only ops stock TF Serving registers),
and renamed into place. Serving the raw-text signature from Python requires
`import tensorflow_text` first (it registers the tokenizer's ops).
"""

import dataclasses
import os
from typing import Optional

import tensorflow as tf

from official_electra.data import glue
from official_electra.modeling import classifier_checkpoint
from official_electra.modeling import errors
from official_electra.serving import finetuned_runs
from official_electra.serving import op_allowlist
from official_electra.serving import request_length
from official_electra.tokenization import wordpiece_tokenizer


ExportError = finetuned_runs.ExportError


@dataclasses.dataclass(frozen=True)
class ServedTask:
  """What the signatures need of a task.

  Attributes:
    labels: the label strings in output order, or None for a regression.
    sentence_pair: whether requests carry `sentence1` and `sentence2`.
  """
  labels: Optional[tuple]
  sentence_pair: bool

  @classmethod
  def from_description(cls, description: dict) -> "ServedTask":
    """The task of a classifier's head description (the `finetuned`
    section of its seed folder's model_config.json)."""
    labels = description["labels"]
    return cls(None if labels is None else tuple(labels),
               description["sentence_pair"])

  @classmethod
  def of_glue_task(cls, name: str) -> "ServedTask":
    """A GLUE task's labels and inputs (`glue.get_task_layout`)."""
    layout = glue.get_task_layout(name)
    return cls(None if layout.labels is None else tuple(layout.labels),
               layout.labelled.text_b_column is not None)


class ClassifierServingModule(tf.Module):
  """The classifier and its tokenizer, with the two serving signatures.

  Args:
    classifier: a built `ElectraClassifier`.
    tokenizer: the `WordpieceTokenizer` it was fine-tuned with.
    task: its `ServedTask` (labels, single sentence or pair).
    max_seq_length: length raw text is packed to.
  """

  def __init__(self, classifier, tokenizer, task: ServedTask,
               max_seq_length: int):
    super().__init__(name="glue_classifier")
    self.classifier = classifier
    self.tokenizer = tokenizer
    self._is_regression = task.labels is None
    self._is_pair_task = task.sentence_pair
    self._max_seq_length = max_seq_length
    if not self._is_regression:
      self._label_strings = tf.constant(list(task.labels))

  def _outputs(self, model_inputs):
    logits = self.classifier(model_inputs, training=False)
    if self._is_regression:
      return {"score": logits[:, 0]}
    label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {"label": tf.gather(self._label_strings, label_ids),
            "label_id": label_ids,
            "probabilities": tf.nn.softmax(logits, axis=-1)}

  def serve_token_ids(self, input_word_ids, input_mask, input_type_ids):
    return self._outputs({"input_word_ids": input_word_ids,
                          "input_mask": input_mask,
                          "input_type_ids": input_type_ids})

  def serve_text(self, *sentences):
    segments = [self.tokenizer.tokenize(sentence) for sentence in sentences]
    packed = self.tokenizer.pack_inputs(segments, self._max_seq_length)
    return self._outputs(request_length.cut_to_longest(packed))

  def signatures(self):
    """`{name: concrete function}` for `tf.saved_model.save`."""
    ids_spec = tf.TensorSpec([None, None], tf.int32)
    token_ids_function = tf.function(self.serve_token_ids).get_concrete_function(
        input_word_ids=ids_spec, input_mask=ids_spec, input_type_ids=ids_spec)
    text_spec = tf.TensorSpec([None], tf.string)
    if self._is_pair_task:
      text_function = tf.function(
          lambda sentence1, sentence2: self.serve_text(sentence1, sentence2)
      ).get_concrete_function(sentence1=text_spec, sentence2=text_spec)
    else:
      text_function = tf.function(
          lambda sentence: self.serve_text(sentence)
      ).get_concrete_function(sentence=text_spec)
    return {"serving_default": text_function,
            "serve_token_ids": token_ids_function}


def load_finetuned_run(run_dir: str):
  """Rebuilds `(classifier, tokenizer, ServedTask, max_seq_length)` from a
  seed folder (written by `official_electra.finetune` or
  `official_electra.save_classifier`)."""
  try:
    classifier, description = classifier_checkpoint.load_classifier(run_dir)
    task = ServedTask.from_description(description)
  except (errors.CheckpointError, glue.GlueDataError) as error:
    raise ExportError(str(error)) from None
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(
      os.path.join(run_dir, description["vocab_file"]),
      lower_case=description["lower_case"])
  return classifier, tokenizer, task, description["max_seq_length"]


def export_classifier(finetuned_dir: str, export_dir: str) -> str:
  """Writes the serving SavedModel of a fine-tuned run to `export_dir`.

  Args:
    finetuned_dir: a task or seed folder written by `official_electra.finetune`,
      or its `--model_dir` when that holds one task
      (`finetuned_runs.resolve_finetuned_run`).
    export_dir: the SavedModel folder to create (for TF Serving, a numbered
      version folder such as `models/sst2/1`); it must not exist yet.

  Returns:
    The seed folder that was exported.

  Raises:
    ExportError: unusable input, or `export_dir` already exists.
    op_allowlist.UnservableOpsError: the graph needs ops TF Serving lacks.
  """
  run_dir = finetuned_runs.run_to_export(finetuned_dir, export_dir)
  classifier, tokenizer, task, max_seq_length = load_finetuned_run(run_dir)
  module = ClassifierServingModule(classifier, tokenizer, task, max_seq_length)
  op_allowlist.save_servable(module, export_dir)
  return run_dir
