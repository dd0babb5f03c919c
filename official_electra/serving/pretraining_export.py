"""A TF Serving SavedModel of a pretrained tower: the discriminator (the
default) or the generator.

Signatures:
  `serving_default`: `input_word_ids`, `input_mask`, `input_type_ids` (int32
    `[batch, seq_len]`, any length up to max_position_embeddings).
  `serve_text`: `sentence` (tf.string `[batch]`), tokenized and packed in the
    graph with the run's vocabulary (`[CLS] A [SEP]`, max_seq_length tokens).
  `serve_text_pair`: `sentence1`, `sentence2` (`[CLS] A [SEP] B [SEP]`).
All return `sequence_output` (float32 `[batch, seq_len, hidden]`), `cls_output`
(float32 `[batch, hidden]`, the `[CLS]` hidden state; ELECTRA has no pooler)
and the tower's head outputs, when the folder holds its head:
  - the discriminator's (the discriminative objectives):
    `replaced_probability` (float32 `[batch, seq_len]`, the probability that
    each token was replaced);
  - the generator's (its masked-LM head): `top_token_ids` (int32
    `[batch, seq_len, TOP_TOKENS]`) and `top_token_probabilities` (float32,
    the same shape), the generator's most probable tokens at each position,
    most probable first (what it would put at a `[MASK]`).
The text signatures also return the packed `input_word_ids` and `input_mask`;
they pack to max_seq_length and run the encoder on the request's longest
sequence only (`request_length`), so their per-token outputs are 0 at
padding positions (the token-id signature computes every position it is
given; its padding positions carry no meaning).

The export is checked with `op_allowlist.check_serving_op_types` (only ops that
stock TF Serving registers) before it is renamed into place. Serving the text
signatures from Python requires `import tensorflow_text` first.
"""

import os

import tensorflow as tf

from official_electra import errors
from official_electra.modeling import checkpoints
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling import pretrained
from official_electra.serving import op_allowlist
from official_electra.serving import request_length
from official_electra.tokenization import wordpiece_tokenizer


class PretrainingExportError(errors.UserError):
  """The model_dir or the export folder is unusable; says the fix."""


TOWERS = pretrained.TOWERS
# Tokens the generator's export returns at each position.
TOP_TOKENS = 5
_PER_TOKEN_OUTPUTS = ("sequence_output", "replaced_probability",
                      "top_token_ids", "top_token_probabilities")


class TowerServingModule(tf.Module):
  """One tower, its pretraining head (when there) and tokenizer, for serving.

  Args:
    model: a built and restored `ElectraModel` with the tower.
    tower: `discriminator` or `generator`.
    tokenizer: the run's `WordpieceTokenizer`.
    max_seq_length: length raw text is packed to.
  """

  def __init__(self, model, tower, tokenizer, max_seq_length):
    super().__init__(name=f"electra_{tower}")
    self.encoder = getattr(model, f"{tower}_network")
    self.head = getattr(model, f"{tower}_head", None)
    self._tower = tower
    self.tokenizer = tokenizer
    self._max_seq_length = max_seq_length

  def serve_token_ids(self, input_word_ids, input_mask, input_type_ids):
    sequence_output = self.encoder(
        {"input_word_ids": input_word_ids, "input_mask": input_mask,
         "input_type_ids": input_type_ids}, training=False)["sequence_output"]
    sequence_output = tf.cast(sequence_output, tf.float32)
    outputs = {"sequence_output": sequence_output,
               "cls_output": sequence_output[:, 0]}
    if self.head is None:
      return outputs
    logits = tf.cast(self.head(sequence_output), tf.float32)
    if self._tower == "discriminator":
      outputs["replaced_probability"] = tf.sigmoid(logits)
    else:
      top = tf.math.top_k(tf.nn.softmax(logits), k=TOP_TOKENS)
      outputs["top_token_ids"] = top.indices
      outputs["top_token_probabilities"] = top.values
    return outputs

  def serve_text(self, *sentences):
    segments = [self.tokenizer.tokenize(sentence) for sentence in sentences]
    packed = self.tokenizer.pack_inputs(segments, self._max_seq_length)
    outputs = self.serve_token_ids(**request_length.cut_to_longest(packed))
    for name in _PER_TOKEN_OUTPUTS:
      if name in outputs:
        outputs[name] = request_length.pad_positions(outputs[name],
                                                     self._max_seq_length)
    outputs["input_word_ids"] = packed["input_word_ids"]
    outputs["input_mask"] = packed["input_mask"]
    return outputs

  def signatures(self):
    """`{name: concrete function}` for `tf.saved_model.save`."""
    ids_spec = tf.TensorSpec([None, None], tf.int32)
    text_spec = tf.TensorSpec([None], tf.string)
    return {
        "serving_default": tf.function(self.serve_token_ids)
                           .get_concrete_function(input_word_ids=ids_spec,
                                                  input_mask=ids_spec,
                                                  input_type_ids=ids_spec),
        "serve_text": tf.function(
            lambda sentence: self.serve_text(sentence)
        ).get_concrete_function(sentence=text_spec),
        "serve_text_pair": tf.function(
            lambda sentence1, sentence2: self.serve_text(sentence1, sentence2)
        ).get_concrete_function(sentence1=text_spec, sentence2=text_spec),
    }


def load_model(model_dir, tower="discriminator"):
  """Builds one tower (and its head, when the folder has it) of a folder's
  model config and restores them from its latest checkpoint (by
  `pretrained.load_model`, the loader of every program and the Python API).

  Any folder with a model config and the tower serves: a pretraining run's
  model_dir (whatever its objective) or an import, one tower or two.

  Returns:
    `(ElectraModel, ModelConfig, checkpoint prefix)`.

  Raises:
    PretrainingExportError, CheckpointError, ModelConfigError.
  """
  recorded = model_config_lib.read_model_config(model_dir)
  if recorded is None:
    raise PretrainingExportError(
        f"{model_dir}: no {model_config_lib.MODEL_CONFIG_FILE}; pass a "
        "--model_dir written by official_electra.train or "
        "official_electra.convert")
  if tower not in TOWERS:
    raise PretrainingExportError(
        f"--tower={tower}: not a tower; pass one of {', '.join(TOWERS)}")
  if getattr(recorded.model, tower) is None:
    held = [name for name in TOWERS if getattr(recorded.model, name)]
    raise PretrainingExportError(
        f"{model_dir}: holds no {tower} (only the {' and '.join(held)}); "
        f"export --tower={held[0]}, or convert or train a model with a "
        f"{tower}")
  heads = tuple(head for head in recorded.model.heads if head == tower)
  return pretrained.load_model(model_dir, towers=(tower,), heads=heads)


def export_pretrained(model_dir, export_dir, tower="discriminator"):
  """Writes one pretrained tower's serving SavedModel.

  Args:
    model_dir: a pretraining model_dir (its latest checkpoint is exported).
    export_dir: the SavedModel folder to create (for TF Serving a numbered
      version folder such as `models/electra/1`); it must not exist.
    tower: `discriminator` (the encoder ELECTRA keeps) or `generator`.

  Returns:
    The exported checkpoint prefix.

  Raises:
    PretrainingExportError, CheckpointError, ModelConfigError,
    UnservableOpsError.
  """
  if tf.io.gfile.exists(export_dir):
    raise PretrainingExportError(
        f"{export_dir} already exists; pass a new --export_dir (TF Serving "
        "reads numbered version folders)")
  model, config, prefix = load_model(model_dir, tower)
  vocab_file = os.path.join(model_dir, checkpoints.VOCAB_FILE)
  if not tf.io.gfile.exists(vocab_file):
    raise PretrainingExportError(
        f"{vocab_file}: missing; the text signatures need the model's "
        "vocabulary: copy it there (or convert with --vocab_file)")
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(
      vocab_file, lower_case=config.lower_case)
  module = TowerServingModule(model, tower, tokenizer, config.max_seq_length)
  op_allowlist.save_servable(module, export_dir)
  return prefix
