"""The text preprocessor of a checkpoint, as a Keras layer."""

import os
from typing import Optional

import tensorflow as tf
import tf_keras

from official_electra.modeling import checkpoints
from official_electra.modeling import model_config as model_config_lib
from official_electra.serving import request_length
from official_electra.tokenization import vocabulary
from official_electra.tokenization import wordpiece_tokenizer


@tf_keras.utils.register_keras_serializable(package="official_electra")
class ElectraPreprocessor(tf_keras.layers.Layer):
  """Raw text to the encoder's inputs, in the graph.

  The project's one tokenizer (BERT-exact normalisation and WordPiece,
  `tokenization/wordpiece_tokenizer.py`) and packing (`[CLS] A [SEP]` or
  `[CLS] A [SEP] B [SEP]` with BERT's truncation), the same the exports'
  raw-text signatures run. Works eagerly, inside `tf.data.Dataset.map`,
  `tf.function` and a functional Keras model
  (`tf_keras.Input(shape=(), dtype=tf.string)`).

  Args:
    vocab_file: the checkpoint's WordPiece vocabulary (`vocab.txt`).
    lower_case: whether the vocabulary is uncased.
    sequence_length: packed length; longer inputs are truncated.
    cut_to_longest: if True, each batch is cut to its longest packed
      sequence (exact: padding is masked out), else it keeps
      `sequence_length`.
    **kwargs: `tf_keras.layers.Layer` arguments such as `name`.
  """

  def __init__(self, vocab_file: str, lower_case: bool,
               sequence_length: int = 128, cut_to_longest: bool = False,
               **kwargs):
    super().__init__(**kwargs)
    if sequence_length < 3:
      raise ValueError(f"sequence_length must be at least 3, got "
                       f"{sequence_length}")
    self.vocab_file = os.fspath(vocab_file)
    self.lower_case = bool(lower_case)
    self.sequence_length = int(sequence_length)
    self.cut_to_longest = bool(cut_to_longest)
    self.tokenizer = wordpiece_tokenizer.WordpieceTokenizer(
        self.vocab_file, lower_case=self.lower_case)

  def call(self, inputs):
    """Tokenizes and packs a batch of texts or of text pairs.

    Args:
      inputs: tf.string `[batch]` sentences, or a tuple or list of two such
        tensors (sentence pairs).

    Returns:
      dict of int32 `[batch, seq_len]` tensors `input_word_ids`,
      `input_mask` (1 on real tokens) and `input_type_ids` (1 on the second
      sentence); `seq_len` is `sequence_length`, or the batch's longest
      packed sequence under `cut_to_longest`.
    """
    sentences = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
    if len(sentences) not in (1, 2):
      raise ValueError("ElectraPreprocessor takes one tensor of sentences or "
                       f"a pair of them, got {len(sentences)}")
    segments = [self.tokenizer.tokenize(tf.reshape(sentence, [-1]))
                for sentence in sentences]
    packed = self.tokenizer.pack_inputs(segments, self.sequence_length)
    if self.cut_to_longest:
      packed = request_length.cut_to_longest(packed)
    return packed

  def get_config(self):
    config = super().get_config()
    config.update({"vocab_file": self.vocab_file,
                   "lower_case": self.lower_case,
                   "sequence_length": self.sequence_length,
                   "cut_to_longest": self.cut_to_longest})
    return config


def load_preprocessor(path: str, sequence_length: Optional[int] = None,
                      cut_to_longest: bool = False) -> ElectraPreprocessor:
  """The `ElectraPreprocessor` of a checkpoint folder.

  Reads the folder's `vocab.txt` and, from its `model_config.json`, the
  case and the sequence length the model was trained (or fine-tuned) at.

  Args:
    path: a pretraining model_dir, a checkpoint prefix, a fine-tuned seed
      folder or a converted import (see `load_encoder`).
    sequence_length: packed length; by default the recorded one.
    cut_to_longest: see `ElectraPreprocessor`.

  Raises:
    CheckpointError: no `model_config.json` there.
    VocabularyError: no usable `vocab.txt` beside it.
  """
  recorded = model_config_lib.require_model_config(path, "load_preprocessor")
  vocab_file = os.path.join(model_config_lib.folder_of(path),
                            checkpoints.VOCAB_FILE)
  if not tf.io.gfile.exists(vocab_file):
    raise vocabulary.VocabularyError(
        f"{vocab_file}: missing; copy the model's vocabulary there (convert "
        "with --vocab_file, or pass it to the ElectraPreprocessor)")
  return ElectraPreprocessor(
      vocab_file, lower_case=recorded.model.lower_case,
      sequence_length=sequence_length or recorded.model.max_seq_length,
      cut_to_longest=cut_to_longest)
