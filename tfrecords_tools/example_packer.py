"""Packs the tokenized sentences of documents into pretraining examples.

The rules of the original ELECTRA `build_pretraining_dataset.py`
(`ExampleBuilder`), which ELECTRA's published models were trained on:

1. Sentences (lines) of one document are accumulated until their tokens reach
   the target length, then all of them become one example. The target is
   `max_seq_length`; after each example, with probability 0.05 the next target
   is a random length in `[5, max_seq_length]` instead. The end of a document
   ends the example being built (examples never span documents).
2. Splitting: with probability 0.1 all sentences go to segment A (like a
   single-sentence task). Otherwise A aims at `(target - 3) // 2` tokens: a
   sentence joins A when A is empty or it keeps A under that aim; the first
   sentence that would take a not-yet-full A over it joins A with
   probability 0.5; every other sentence joins B. So B may be empty.
3. Truncation (the only way corpus tokens are dropped; counted as
   `num_truncated_tokens`): A keeps its first `max_seq_length - 2` tokens and
   B its first `max_seq_length - 3 - len(A)` tokens (none if that is not
   positive). This drops the overflow of the sentence that reached the target,
   and most of any single line longer than `max_seq_length`: split such text
   into shorter lines to keep it.
4. Layout: `[CLS] A [SEP]`, then `B [SEP]` if B is not empty, then `[PAD]`s;
   segment ids 0 on `[CLS] A [SEP]` and 1 on `B [SEP]`.
"""

import dataclasses
import random

import numpy as np

SINGLE_SEGMENT_PROBABILITY = 0.1
RANDOM_TARGET_PROBABILITY = 0.05
MIN_RANDOM_TARGET = 5


@dataclasses.dataclass
class PackedExamples:
  """Examples as int64 `[num_examples, max_seq_length]` arrays, and counts."""
  input_ids: np.ndarray
  input_mask: np.ndarray
  segment_ids: np.ndarray
  num_tokens: int
  num_truncated_tokens: int


class ExamplePacker:
  """Packs the sentences of a run of documents (one unit of work)."""

  def __init__(self, max_seq_length: int, cls_id: int, sep_id: int,
               pad_id: int, rng: random.Random):
    """Args: the record length, special ids, and the random source."""
    if max_seq_length < MIN_RANDOM_TARGET:
      raise ValueError(f"max_seq_length must be at least {MIN_RANDOM_TARGET}")
    self._max_length = max_seq_length
    self._cls_id, self._sep_id, self._pad_id = cls_id, sep_id, pad_id
    self._rng = rng

  def pack(self, token_ids: np.ndarray, row_splits: np.ndarray,
           document_ends: list[bool]) -> PackedExamples:
    """Packs sentences `token_ids[row_splits[i]:row_splits[i + 1]]`.

    Args:
      token_ids: int `[total_tokens]`, the sentences' ids end to end.
      row_splits: int `[num_sentences + 1]`.
      document_ends: per sentence, whether its document ends after it.

    Returns:
      The examples and token counts.
    """
    examples = []
    sentences, length, target = [], 0, self._max_length
    lengths = np.diff(row_splits).tolist()
    starts = row_splits[:-1].tolist()
    for start, sentence_length, document_end in zip(starts, lengths,
                                                    document_ends):
      sentences.append((start, sentence_length))
      length += sentence_length
      if length >= target or (document_end and length):
        examples.append(self._split(token_ids, sentences, target))
        sentences, length = [], 0
        target = (self._rng.randint(MIN_RANDOM_TARGET, self._max_length)
                  if self._rng.random() < RANDOM_TARGET_PROBABILITY
                  else self._max_length)
      elif document_end:
        sentences = []
    return self._to_arrays(examples, num_tokens=int(sum(lengths)))

  def _split(self, token_ids, sentences, target):
    """Segments A and B of one example, truncated (rules 2 and 3)."""
    if self._rng.random() < SINGLE_SEGMENT_PROBABILITY:
      first_target = float("inf")
    else:
      first_target = (target - 3) // 2
    first, second = [], []
    first_length = second_length = 0
    for start, length in sentences:
      if (first_length == 0 or first_length + length < first_target or
          (second_length == 0 and first_length < first_target and
           self._rng.random() < 0.5)):
        first.append(token_ids[start:start + length])
        first_length += length
      else:
        second.append(token_ids[start:start + length])
        second_length += length
    first_ids = np.concatenate(first)[:self._max_length - 2]
    second_room = max(0, self._max_length - len(first_ids) - 3)
    second_ids = (np.concatenate(second)[:second_room] if second
                  else first_ids[:0])
    return first_ids, second_ids

  def _to_arrays(self, examples, num_tokens):
    shape = (len(examples), self._max_length)
    input_ids = np.full(shape, self._pad_id, np.int64)
    input_mask = np.zeros(shape, np.int64)
    segment_ids = np.zeros(shape, np.int64)
    kept_tokens = 0
    for row, (first_ids, second_ids) in enumerate(examples):
      end_first = len(first_ids) + 2
      input_ids[row, 0] = self._cls_id
      input_ids[row, 1:end_first - 1] = first_ids
      input_ids[row, end_first - 1] = self._sep_id
      end = end_first
      if len(second_ids):
        end = end_first + len(second_ids) + 1
        input_ids[row, end_first:end - 1] = second_ids
        input_ids[row, end - 1] = self._sep_id
        segment_ids[row, end_first:end] = 1
      input_mask[row, :end] = 1
      kept_tokens += len(first_ids) + len(second_ids)
    return PackedExamples(
        input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
        num_tokens=num_tokens, num_truncated_tokens=num_tokens - kept_tokens)
