"""Property test of text -> units -> tokens -> packed, serialized examples.

Arbitrary Unicode (any code point but surrogates: control characters, blank
and whitespace-only lines, very long lines without spaces), as plain text or
JSON Lines, goes through the library path `build_pretraining_dataset` uses:
`corpus_reader` (sniffing and cutting into small units) and
`unit_processor.UnitProcessor` (decoding, WordPiece, `example_packer`,
`pretraining_features.serialize_examples`). It never raises, and every record
is a well-formed example.
"""

import json
import os
import tempfile

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest
import tensorflow as tf

from official_electra.data import pretraining_features
from tfrecords_tools import corpus_reader
from tfrecords_tools import unit_processor

_SEQ = 12
_UNIT_BYTES = 48  # Small units: a long line is force-cut (4 x 48 bytes).
_WORDS = ("the", "a", "cat", "dog", "sat", "on", "mat", "##s", "##ed", "é",
          "日", "本", "ß", ".", ",", "!", "?", "[", "]", "(", ")", "0", "1")

_ANY_CHARACTER = st.characters(blacklist_categories=("Cs",))
_LINE = st.one_of(
    st.text(_ANY_CHARACTER, max_size=40),
    st.text(st.sampled_from(" \t\r\x0b\x0c\x1c\x85\u2028\u3000"), max_size=4),
    st.lists(st.sampled_from(_WORDS + ("[CLS]", "[SEP]", "[PAD]", "[MASK]")),
             max_size=20).map(" ".join),
    st.tuples(st.text(_ANY_CHARACTER, min_size=1, max_size=8),
              st.integers(30, 200)).map(lambda pair: pair[0] * pair[1]),
)
_DOCUMENT_LINES = st.lists(_LINE, max_size=25)


@pytest.fixture(scope="module")
def processor_and_ids(tmp_path_factory):
  vocab_file = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  vocab_file.write_text("\n".join(("[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                   "[MASK]") + _WORDS) + "\n",
                        encoding="utf-8")
  processor = unit_processor.UnitProcessor(
      str(vocab_file), lower_case=True, max_seq_length=_SEQ, seed=0)
  special_ids = dict(pad=0, cls=2, sep=3, mask=4)
  return processor, special_ids, 5 + len(_WORDS)


def _corpus_bytes(lines, json_lines):
  if not json_lines:
    return "\n".join(lines).encode("utf-8")
  rows = [json.dumps({"text": line}) if index % 5 else line
          for index, line in enumerate(lines)]  # Every 5th row raw: malformed.
  return "\n".join(rows).encode("utf-8")


def _check_record(record, special_ids, vocab_size):
  """Asserts the layout `[CLS] A [SEP] (B [SEP]) [PAD]...`; returns len(A+B)."""
  features = tf.train.Example.FromString(record).features.feature
  assert sorted(features) == sorted(pretraining_features.FEATURE_NAMES)
  ids, mask, segments = (list(features[name].int64_list.value)
                         for name in pretraining_features.FEATURE_NAMES)
  assert len(ids) == len(mask) == len(segments) == _SEQ
  length = sum(mask)
  assert length >= 2 and mask == [1] * length + [0] * (_SEQ - length)
  assert ids[0] == special_ids["cls"] and ids[length - 1] == special_ids["sep"]
  assert all(0 <= token < vocab_size for token in ids)
  assert ids[length:] == [special_ids["pad"]] * (_SEQ - length)
  separators = [i for i in range(length) if ids[i] == special_ids["sep"]]
  assert len(separators) in (1, 2) and separators[-1] == length - 1
  first_end = separators[0] + 1
  assert first_end >= 3 and (len(separators) == 1 or length - first_end >= 2)
  assert segments == ([0] * first_end + [1] * (length - first_end) +
                      [0] * (_SEQ - length))
  content = [token for i, token in enumerate(ids[:length])
             if i != 0 and i not in separators]
  # Text never turns into a special token: "[CLS]" in the corpus is "[ cls ]".
  assert not set(content) & {special_ids[name] for name in
                             ("pad", "cls", "sep", "mask")}
  return len(content)


@settings(max_examples=60, deadline=None)
@given(documents=st.lists(_DOCUMENT_LINES, min_size=1, max_size=4),
       json_lines=st.booleans())
def test_any_unicode_gives_well_formed_examples(processor_and_ids, documents,
                                                json_lines):
  processor, special_ids, vocab_size = processor_and_ids
  lines = [line for document in documents for line in document + [""]]
  data = _corpus_bytes(lines, json_lines)
  with tempfile.TemporaryDirectory() as directory:
    path = os.path.join(directory,
                        "corpus.jsonl" if json_lines else "corpus.txt")
    with open(path, "wb") as corpus_file:
      corpus_file.write(data)
    files, skipped = corpus_reader.inspect_corpus_files([path])
    if not data.strip() or b"\x00" in data[:8192]:
      assert not files and list(skipped) == [path]
      return
    assert len(files) == 1
    units = list(corpus_reader.iter_units(files, _UNIT_BYTES))
  assert b"".join(unit.data for unit in units) == data
  records = []
  for unit in units:
    result = processor(unit)
    records += result.records
    # Cuts never split a UTF-8 sequence, so valid text loses no byte.
    assert result.num_replaced_bytes == 0
    kept_tokens = sum(_check_record(record, special_ids, vocab_size)
                      for record in result.records)
    assert kept_tokens == result.num_tokens - result.num_truncated_tokens
    assert 0 <= result.num_truncated_tokens <= result.num_tokens
  if records:
    parsed = pretraining_features.parse_examples(tf.constant(records), _SEQ)
    assert parsed["input_word_ids"].shape == (len(records), _SEQ)
