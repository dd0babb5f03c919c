"""The project's one tokenizer: BERT-exact WordPiece on tensorflow-text."""

import os
from typing import Sequence, Union

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from official_electra.tokenization import bert_text_normalization
from official_electra.tokenization import input_packing
from official_electra.tokenization import vocabulary as vocabulary_lib

# Words reaching WordPiece have at most MAX_CHARS_PER_WORD (200) characters,
# so at most 800 UTF-8 bytes: the byte limit never turns a shorter word to
# [UNK] by itself.
_MAX_BYTES_PER_WORD = 4 * bert_text_normalization.MAX_CHARS_PER_WORD


class WordpieceTokenizer(tf.Module):
  """Text to WordPiece ids with the ids of BERT's reference tokenizer.

  BERT's normalisation and word splitting run as TF string ops
  (`bert_text_normalization`), then tensorflow-text's FastWordpieceTokenizer
  (no lower-casing, no pre-tokenisation of its own) maps words to ids. The same
  graph serves the fast batch path (`tokenize_to_numpy`, for preprocessing) and
  the in-graph path (`tokenize`, inside `tf.function`, `tf.data` or a
  SavedModel signature), so both give identical ids. A word longer than 200
  characters becomes `[UNK]`, as in the original's
  `model/tokenization.py` (`WordpieceTokenizer`); Hugging Face's limit is 100.

  Example:
    tokenizer = WordpieceTokenizer("vocab.txt", lower_case=True)
    ids = tokenizer.tokenize(tf.constant(["Hello world!"]))  # [[7592, 2088, 999]]
    inputs = tokenizer.pack_inputs([ids], seq_length=128)
  """

  def __init__(self, vocab_file: Union[str, os.PathLike], lower_case: bool,
               name: str = "wordpiece_tokenizer"):
    """Reads and checks the vocabulary.

    Args:
      vocab_file: BERT-format vocabulary, one token per line.
      lower_case: BERT's `do_lower_case` (True for uncased vocabularies):
        Unicode lower case and accents stripped before WordPiece.
      name: the tf.Module name.

    Raises:
      VocabularyError: the file is missing or lacks a special token.
    """
    super().__init__(name=name)
    self._vocabulary = vocabulary_lib.load_vocabulary(vocab_file)
    self._lower_case = bool(lower_case)
    self._special_token_ids = self._vocabulary.special_token_ids()
    self._wordpiece = tf_text.FastWordpieceTokenizer(
        vocab=list(self._vocabulary.tokens),
        max_bytes_per_word=_MAX_BYTES_PER_WORD,
        token_out_type=tf.int32,
        unknown_token="[UNK]",
        no_pretokenization=True)
    self._tokenize_batch = tf.function(
        self.tokenize, input_signature=[tf.TensorSpec([None], tf.string)],
        autograph=False)

  @property
  def vocab_size(self) -> int:
    return self._vocabulary.size

  @property
  def lower_case(self) -> bool:
    return self._lower_case

  @property
  def vocab_sha256(self) -> str:
    """Hex sha256 of the vocabulary file's bytes."""
    return self._vocabulary.sha256

  @property
  def vocab_file(self) -> str:
    return self._vocabulary.path

  @property
  def vocabulary(self) -> tuple[str, ...]:
    """The tokens in id order."""
    return self._vocabulary.tokens

  def special_token_ids(self) -> dict[str, int]:
    """Ids of `[PAD] [UNK] [CLS] [SEP] [MASK]` in this vocabulary."""
    return dict(self._special_token_ids)

  @property
  def pad_id(self) -> int:
    return self._special_token_ids["[PAD]"]

  @property
  def unk_id(self) -> int:
    return self._special_token_ids["[UNK]"]

  @property
  def cls_id(self) -> int:
    return self._special_token_ids["[CLS]"]

  @property
  def sep_id(self) -> int:
    return self._special_token_ids["[SEP]"]

  @property
  def mask_id(self) -> int:
    return self._special_token_ids["[MASK]"]

  def tokenize(self, texts: tf.Tensor) -> tf.RaggedTensor:
    """WordPiece ids of each text (no `[CLS]`/`[SEP]`).

    Args:
      texts: tf.string `[batch]` of UTF-8 text.

    Returns:
      tf.int32 RaggedTensor `[batch, (tokens)]`.
    """
    words = bert_text_normalization.split_words(texts, self._lower_case)
    return self._wordpiece.tokenize(words).merge_dims(1, 2)

  def tokenize_to_numpy(self, texts: Sequence[str]
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The fast batch path for preprocessing: one graph call for all texts.

    Args:
      texts: Python strings; thousands at once amortise the call.

    Returns:
      `(ids, row_splits)`: int32 `[total_tokens]` and int64 `[len(texts)+1]`;
      the ids of text i are `ids[row_splits[i]:row_splits[i + 1]]`.
    """
    if not texts:
      return np.zeros([0], np.int32), np.zeros([1], np.int64)
    ids = self._tokenize_batch(tf.constant(texts, dtype=tf.string))
    return ids.flat_values.numpy(), ids.row_splits.numpy()

  def pack_inputs(self, segments: Sequence[tf.RaggedTensor],
                  seq_length: int) -> dict[str, tf.Tensor]:
    """Packs one or two tokenized segments as `[CLS] A [SEP] (B [SEP])`.

    Args:
      segments: one or two int RaggedTensors `[batch, (tokens)]`, e.g. from
        `tokenize`.
      seq_length: the fixed output length.

    Returns:
      `input_word_ids`, `input_mask`, `input_type_ids`: int32
      `[batch, seq_length]` (see `input_packing.pack_segments`).
    """
    return input_packing.pack_segments(
        segments, seq_length, cls_id=self.cls_id, sep_id=self.sep_id,
        pad_id=self.pad_id)
