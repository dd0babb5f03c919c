"""BERT's text normalisation and word splitting, in core TensorFlow ops.

Reproduces the `BasicTokenizer` of BERT's reference `tokenization.py`:
remove NUL, U+FFFD and control/format/unassigned characters; every Unicode
space becomes a word boundary; CJK ideographs become words of their own;
when lower-casing, Unicode lower case then NFD with the combining marks (Mn)
removed; every punctuation character (Unicode P* and ASCII symbols) becomes a
word of its own; words longer than 200 characters become `[UNK]`, as the
WordPiece step of ELECTRA's `model/tokenization.py` does
(`WordpieceTokenizer`, `max_input_chars_per_word=200`; Hugging Face's
tokenizers use 100).

tensorflow-text's own lower-casing (NFKC_Casefold) is not used: it folds
full-width punctuation to ASCII, which BERT does not (ELECTRA_REFERENCE.md
section 7). Ops used: RegexReplace, StringLower, StringSplitV2, StringLength
(core TensorFlow) and NormalizeUTF8 (tensorflow-text, present in the TF Text
that stock TF Serving embeds).

Known limit: characters added in recent Unicode versions may be classified
differently by Python's `unicodedata` (BERT's reference) and by RE2/ICU here.
"""

import tensorflow as tf
import tensorflow_text as tf_text

# google-research/electra model/tokenization.py, WordpieceTokenizer.__init__.
MAX_CHARS_PER_WORD = 200
UNKNOWN_WORD = "[UNK]"

# Everything that is not a letter, mark, number, punctuation, symbol or
# separator (controls, format characters, private use, unassigned), except
# the whitespace controls; plus U+FFFD, which BERT drops too.
_REMOVED_CHARS = r"[^\p{L}\p{M}\p{N}\p{P}\p{S}\p{Z}\t\n\r]|\x{FFFD}"
# Non-ASCII separators (Zs, Zl, Zp); StringSplitV2 handles ASCII whitespace.
_UNICODE_SPACES = r"[\p{Z}]"
_CJK_IDEOGRAPHS = (r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}"
                   r"\x{2A700}-\x{2B73F}\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}"
                   r"\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}")
# BERT counts all non-alphanumeric ASCII as punctuation, and Unicode P*.
_ISOLATED_CHARS = r"([!-/:-@\[-`{-~\p{P}" + _CJK_IDEOGRAPHS + r"])"
_COMBINING_MARKS = r"\p{Mn}"


def normalize_text(texts: tf.Tensor, lower_case: bool) -> tf.Tensor:
  """Cleans, optionally lower-cases, and spaces out punctuation and CJK.

  Args:
    texts: tf.string `[batch]` of UTF-8 text.
    lower_case: BERT's `do_lower_case`: lower-case, NFD, drop accents (Mn).

  Returns:
    tf.string `[batch]`; splitting it on whitespace gives BERT's words.
  """
  texts = tf.strings.regex_replace(texts, _REMOVED_CHARS, "")
  texts = tf.strings.regex_replace(texts, _UNICODE_SPACES, " ")
  if lower_case:
    texts = tf.strings.lower(texts, encoding="utf-8")
    texts = tf_text.normalize_utf8(texts, "NFD")
    texts = tf.strings.regex_replace(texts, _COMBINING_MARKS, "")
  return tf.strings.regex_replace(texts, _ISOLATED_CHARS, r" \1 ")


def split_words(texts: tf.Tensor, lower_case: bool) -> tf.RaggedTensor:
  """BERT's words of each text, ready for WordPiece.

  Args:
    texts: tf.string `[batch]` of UTF-8 text.
    lower_case: as in `normalize_text`.

  Returns:
    tf.string RaggedTensor `[batch, (words)]`; a word longer than
    `MAX_CHARS_PER_WORD` (200) characters is replaced by `[UNK]`.
  """
  words = tf.strings.split(normalize_text(texts, lower_case))
  too_long = tf.strings.length(words.flat_values,
                               unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
  return words.with_flat_values(
      tf.where(too_long, UNKNOWN_WORD, words.flat_values))
