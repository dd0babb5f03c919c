"""Tests of WordpieceTokenizer: parity with BERT's reference, both paths."""

import unicodedata
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf

from official_electra.tokenization import WordpieceTokenizer
from tests.tokenization import varied_text

_SAMPLE_LINES = 1500


class _UnicodedataWithoutNfc:
  """`unicodedata` whose NFC is the identity.

  transformers' BasicTokenizer adds an NFC step that BERT's reference
  `tokenization.py` does not have; without it the two are the same algorithm.
  """

  def __getattr__(self, name):
    return getattr(unicodedata, name)

  def normalize(self, form, text):
    return text if form == "NFC" else unicodedata.normalize(form, text)


def _bert_reference_ids(vocab_file, lower_case, lines):
  transformers = pytest.importorskip("transformers")
  from transformers.models.bert import tokenization_bert  # pylint: disable=g-import-not-at-top
  reference = transformers.BertTokenizer(
      str(vocab_file), do_lower_case=lower_case, tokenize_chinese_chars=True,
      strip_accents=None)
  with mock.patch.object(tokenization_bert, "unicodedata",
                         _UnicodedataWithoutNfc()):
    return [
        reference.convert_tokens_to_ids([
            piece for word in reference.basic_tokenizer.tokenize(line)
            for piece in reference.wordpiece_tokenizer.tokenize(word)])
        for line in lines]


def _our_ids(tokenizer, lines):
  ids, row_splits = tokenizer.tokenize_to_numpy(lines)
  return [ids[start:end].tolist()
          for start, end in zip(row_splits[:-1], row_splits[1:])]


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def tokenizer(request, bert_vocab_file):
  return WordpieceTokenizer(bert_vocab_file, lower_case=request.param)


def test_ids_equal_bert_reference_on_every_line(tokenizer, bert_vocab_file):
  lines = varied_text.varied_lines(_SAMPLE_LINES, seed=1)
  ours = _our_ids(tokenizer, lines)
  reference = _bert_reference_ids(bert_vocab_file, tokenizer.lower_case, lines)
  mismatches = [(line, a, b) for line, a, b in zip(lines, ours, reference)
                if a != b]
  assert not mismatches, f"{len(mismatches)} lines differ, first: {mismatches[0]}"
  assert sum(map(len, ours)) > 10 * _SAMPLE_LINES


def test_ids_equal_hugging_face_bert_wordpiece_tokenizer(tokenizer,
                                                         bert_vocab_file):
  tokenizers = pytest.importorskip("tokenizers")
  # Left out where tokenizers departs from BERT: it lower-cases one character
  # at a time (no final sigma) and treats U+0085 as a space, not a control.
  lines = varied_text.varied_lines(_SAMPLE_LINES, seed=2, random_chars=False,
                                   excluded="\u03a3\x85")
  reference = tokenizers.BertWordPieceTokenizer(
      str(bert_vocab_file), lowercase=tokenizer.lower_case, clean_text=True,
      handle_chinese_chars=True, strip_accents=None)
  reference_ids = [encoding.ids[1:-1]
                   for encoding in reference.encode_batch(lines)]
  assert _our_ids(tokenizer, lines) == reference_ids


def test_in_graph_path_equals_fast_path(tokenizer):
  lines = varied_text.varied_lines(200, seed=3)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def tokenize_in_graph(texts):
    return tokenizer.tokenize(texts)

  in_graph = tokenize_in_graph(tf.constant(lines))
  assert in_graph.dtype == tf.int32
  assert in_graph.to_list() == _our_ids(tokenizer, lines)
  dataset = tf.data.Dataset.from_tensor_slices(lines).batch(64).map(
      tokenizer.tokenize)
  from_dataset = [row for batch in dataset for row in batch.to_list()]
  assert from_dataset == _our_ids(tokenizer, lines)


def test_known_ids(bert_vocab_file):
  tokenizer = WordpieceTokenizer(bert_vocab_file, lower_case=True)
  ids = tokenizer.tokenize(tf.constant(["Hello, World!", "", "x" * 101]))
  assert ids.to_list() == [[7592, 1010, 2088, 999], [], [100]]


def test_special_tokens_and_properties(bert_vocab_file):
  tokenizer = WordpieceTokenizer(bert_vocab_file, lower_case=True)
  assert tokenizer.special_token_ids() == {
      "[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
  assert (tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id,
          tokenizer.mask_id, tokenizer.unk_id) == (0, 101, 102, 103, 100)
  assert tokenizer.vocab_size == 30522
  assert tokenizer.lower_case
  assert len(tokenizer.vocab_sha256) == 64


def test_special_ids_come_from_the_vocabulary(tmp_path):
  vocab_file = tmp_path / "vocab.txt"
  vocab_file.write_text("\n".join(
      ["[MASK]", "[SEP]", "[CLS]", "[UNK]", "[PAD]", "a", "##b"]) + "\n")
  tokenizer = WordpieceTokenizer(vocab_file, lower_case=True)
  assert tokenizer.special_token_ids() == {
      "[PAD]": 4, "[UNK]": 3, "[CLS]": 2, "[SEP]": 1, "[MASK]": 0}
  assert tokenizer.tokenize(tf.constant(["ab AB c"])).to_list() == [[5, 6, 5, 6, 3]]


def test_empty_batch_on_fast_path(bert_vocab_file):
  ids, row_splits = WordpieceTokenizer(
      bert_vocab_file, lower_case=True).tokenize_to_numpy([])
  assert ids.shape == (0,)
  np.testing.assert_array_equal(row_splits, [0])
