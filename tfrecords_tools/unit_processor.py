"""Turns one corpus unit into serialized records (runs in worker processes).

Decoding: invalid UTF-8 bytes become U+FFFD (counted, then dropped by the
tokenizer's cleaning, as BERT drops U+FFFD). Lines are split on `\\n` only and
stripped; a blank line (only whitespace) ends a document. A JSON Lines row is
one document: its `text` field split into lines; rows that are not JSON
objects with a string `text` are skipped and counted.
"""

import codecs
import dataclasses
import json
import random
from typing import Optional

import numpy as np
import tensorflow as tf

from official_electra.data import pretraining_features
from official_electra.tokenization import WordpieceTokenizer
from tfrecords_tools import corpus_reader
from tfrecords_tools import example_packer

_COUNTING_ERRORS = "tfrecords_tools_count_replace"
_replaced_bytes = 0


def _count_and_replace(error: UnicodeDecodeError):
  global _replaced_bytes
  _replaced_bytes += error.end - error.start
  return "\ufffd", error.end


codecs.register_error(_COUNTING_ERRORS, _count_and_replace)


@dataclasses.dataclass
class UnitResult:
  """The records of one unit and what went into them."""
  index: int
  records: list
  num_documents: int = 0
  num_tokens: int = 0
  num_truncated_tokens: int = 0
  num_replaced_bytes: int = 0
  num_malformed_json_lines: int = 0
  # Occurrences of each vocabulary id in the records' real (unpadded) tokens.
  token_counts: Optional[np.ndarray] = None


def _decode(data: bytes) -> tuple[str, int]:
  global _replaced_bytes
  _replaced_bytes = 0
  text = data.decode("utf-8", _COUNTING_ERRORS)
  return text, _replaced_bytes


def _text_documents(text: str):
  """Sentences and document ends of plain text; counts documents."""
  sentences, document_ends = [], []
  for line in text.split("\n"):
    line = line.strip()
    if line:
      sentences.append(line)
      document_ends.append(False)
    elif document_ends and not document_ends[-1]:
      document_ends[-1] = True
  if document_ends:
    document_ends[-1] = True
  return sentences, document_ends, 0


def _json_lines_documents(text: str):
  """Sentences and document ends of JSON Lines; counts malformed rows."""
  sentences, document_ends, malformed = [], [], 0
  for row in text.split("\n"):
    if not row.strip():
      continue
    try:
      document = json.loads(row)
      lines = document["text"].split("\n")
    except (ValueError, KeyError, TypeError, AttributeError):
      malformed += 1
      continue
    lines = [line.strip() for line in lines if line.strip()]
    sentences.extend(lines)
    document_ends.extend([False] * (len(lines) - 1) + [True] * bool(lines))
  return sentences, document_ends, malformed


def read_sentences(unit: corpus_reader.CorpusUnit):
  """Decodes a unit into sentences.

  Returns:
    `(sentences, document_ends, num_replaced_bytes, num_malformed_json_lines)`
    where `document_ends[i]` says whether a document ends after sentence i.
  """
  text, replaced_bytes = _decode(unit.data)
  if unit.kind == corpus_reader.JSON_LINES:
    sentences, document_ends, malformed = _json_lines_documents(text)
  else:
    sentences, document_ends, malformed = _text_documents(text)
  return sentences, document_ends, replaced_bytes, malformed


class UnitProcessor:
  """Tokenizes, packs and serializes units; one per worker process."""

  def __init__(self, vocab_file: str, lower_case: bool, max_seq_length: int,
               seed: int):
    self._tokenizer = WordpieceTokenizer(vocab_file, lower_case=lower_case)
    self._max_seq_length = max_seq_length
    self._seed = seed

  def __call__(self, unit: corpus_reader.CorpusUnit) -> UnitResult:
    sentences, document_ends, replaced_bytes, malformed = read_sentences(unit)
    token_ids, row_splits = self._tokenizer.tokenize_to_numpy(sentences)
    # The random source depends on the seed and the unit only, so the output
    # does not depend on how many workers share the units.
    packer = example_packer.ExamplePacker(
        self._max_seq_length, cls_id=self._tokenizer.cls_id,
        sep_id=self._tokenizer.sep_id, pad_id=self._tokenizer.pad_id,
        rng=random.Random(f"{self._seed}:{unit.index}"))
    packed = packer.pack(token_ids, row_splits, document_ends)
    records = pretraining_features.serialize_examples(
        packed.input_ids, packed.input_mask, packed.segment_ids)
    return UnitResult(
        index=unit.index, records=records, num_documents=sum(document_ends),
        num_tokens=packed.num_tokens,
        num_truncated_tokens=packed.num_truncated_tokens,
        num_replaced_bytes=replaced_bytes, num_malformed_json_lines=malformed,
        token_counts=count_tokens(packed.input_ids, packed.input_mask,
                                  self._tokenizer.vocab_size))


def count_tokens(input_ids, input_mask, vocab_size) -> np.ndarray:
  """int64 `[vocab_size]`: occurrences of each id where the mask is 1."""
  input_ids = np.asarray(input_ids)
  return np.bincount(input_ids[np.asarray(input_mask) == 1].ravel(),
                     minlength=vocab_size).astype(np.int64)


_worker_processor = None


def init_worker(vocab_file: str, lower_case: bool, max_seq_length: int,
                seed: int) -> None:
  """Pool initializer: one TF thread per worker, one processor."""
  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  global _worker_processor
  _worker_processor = UnitProcessor(vocab_file, lower_case, max_seq_length,
                                    seed)


def process_in_worker(unit: corpus_reader.CorpusUnit) -> UnitResult:
  return _worker_processor(unit)
