"""SQuAD's model windows: each question's context cut into `[CLS] question
[SEP] window [SEP]` windows with a doc stride, and the windows as arrays.

Follows the original's `finetune/qa/qa_tasks.py` (ELECTRA_REFERENCE_SQUAD.md
section 1): the training answer mapped from words to WordPiece tokens (with
the improved span), the max-context flag of each token, per-window labels.
Tokenisation is our BERT-exact `WordpieceTokenizer`, run in a few batched
calls over the distinct words of all contexts. The questions come from
`squad.read_squad_json`.
"""

import dataclasses
from typing import Sequence

import numpy as np

from official_electra.data import squad

# Windows per example must stay below this, or unique ids collide.
_WINDOW_ID_FACTOR = 1000
# Distinct texts per `tokenize_to_numpy` call.
_TOKENIZE_BATCH = 50000


@dataclasses.dataclass(frozen=True)
class SquadWindow:
  """One window (feature) of one example, as the model reads it.

  Attributes:
    unique_id: `1000 * example_index + window_index`.
    example_index: the example's index in the list given to `featurize`.
    window_index: the window's index among the example's windows.
    tokens: the WordPiece strings of `[CLS] question [SEP] window [SEP]`.
    token_to_orig_map: packed position -> word index, for the doc tokens.
    token_is_max_context: packed position -> whether this window gives the
      token its most context (the original's `_check_is_max_context`).
    input_word_ids: int32 `[max_seq_length]`, zero-padded.
    input_mask: int32 `[max_seq_length]`, 1 for real tokens.
    input_type_ids: int32 `[max_seq_length]`, 1 for the window and its SEP.
    start_position: the answer's first packed position; 0 (`[CLS]`) when the
      question is impossible, the answer lies outside this window, or the
      window was built without labels.
    end_position: the answer's last packed position, 0 as `start_position`.
    is_impossible: the question's label (per question, not per window).
  """
  unique_id: int
  example_index: int
  window_index: int
  tokens: tuple
  token_to_orig_map: dict
  token_is_max_context: dict
  input_word_ids: np.ndarray
  input_mask: np.ndarray
  input_type_ids: np.ndarray
  start_position: int
  end_position: int
  is_impossible: bool


@dataclasses.dataclass(frozen=True)
class _Context:
  """The WordPiece tokens of one context's words.

  Attributes:
    token_ids: the ids of all doc tokens.
    token_to_word: the word index of each doc token (`tok_to_orig_index`).
    word_to_token: each word's first doc token (`orig_to_tok_index`).
  """
  token_ids: list
  token_to_word: list
  word_to_token: list


def featurize(examples: Sequence[squad.SquadExample], tokenizer,
              max_seq_length: int, doc_stride: int, max_query_length: int,
              is_training: bool) -> list:
  """The windows of every example in example order (the original's featurize).

  Args:
    examples: from `read_squad_file` (with `is_training` alike for labels).
    tokenizer: a `WordpieceTokenizer`.
    max_seq_length: the packed length (the original: 512 for SQuAD).
    doc_stride: how far each window advances (the original: 128).
    max_query_length: question tokens kept (the original: 64).
    is_training: label each window (`start_position`, `end_position`).

  Returns:
    `SquadWindow`s; example i's windows have unique ids `1000 * i + w`.

  Raises:
    squad.SquadDataError: a length setting is unusable, or a question leaves
      no room for its context, or a context has no tokens or needs 1000
      windows.
  """
  return featurize_with_word_maps(examples, tokenizer, max_seq_length,
                                  doc_stride, max_query_length, is_training)[0]


def featurize_with_word_maps(examples: Sequence[squad.SquadExample], tokenizer,
                             max_seq_length: int, doc_stride: int,
                             max_query_length: int, is_training: bool
                             ) -> tuple[list, dict]:
  """`featurize`, and each distinct context's token -> word map.

  Returns:
    `(windows, word_maps)`: the windows as `featurize`; `word_maps` maps each
    distinct context text (in first-seen order) to the word index of each of
    its doc tokens, what `windows_from_arrays` rebuilds the windows from.
  """
  _check_lengths(max_seq_length, doc_stride, max_query_length)
  texts = [word for example in _distinct_contexts(examples)
           for word in example.doc_words]
  texts += [example.question_text for example in examples]
  if is_training:
    texts += [example.answer_text for example in examples
              if not example.is_impossible]
  token_ids = _tokenize_distinct(tokenizer, texts)
  contexts = {}
  for example in _distinct_contexts(examples):
    contexts[example.context_text] = _tokenize_context(example.doc_words,
                                                       token_ids)
  windows = []
  for example_index, example in enumerate(examples):
    query = token_ids[example.question_text][:max_query_length]
    answer_span = None
    if is_training:
      answer_span = _answer_token_span(
          example, contexts[example.context_text],
          token_ids.get(example.answer_text, ()))
    windows.extend(_example_windows(
        example_index, example, query, contexts[example.context_text],
        answer_span, tokenizer, max_seq_length, doc_stride))
  return windows, {text: context.token_to_word
                   for text, context in contexts.items()}


def _check_lengths(max_seq_length, doc_stride, max_query_length):
  for name, value in (("max_seq_length", max_seq_length),
                      ("doc_stride", doc_stride),
                      ("max_query_length", max_query_length)):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
      raise squad.SquadDataError(
          f"{name} must be a positive integer, not {value!r}: set it to "
          "e.g. 512 / 128 / 64 as the original")


def _distinct_contexts(examples):
  """One example per distinct context text, in first-seen order."""
  return list({example.context_text: example for example in examples}.values())


def _tokenize_distinct(tokenizer, texts):
  """Each distinct text -> its WordPiece ids, in few batched graph calls."""
  distinct = list(dict.fromkeys(texts))
  token_ids = {}
  for begin in range(0, len(distinct), _TOKENIZE_BATCH):
    batch = distinct[begin:begin + _TOKENIZE_BATCH]
    ids, row_splits = tokenizer.tokenize_to_numpy(batch)
    ids, row_splits = ids.tolist(), row_splits.tolist()
    for index, text in enumerate(batch):
      token_ids[text] = ids[row_splits[index]:row_splits[index + 1]]
  return token_ids


def _tokenize_context(doc_words, token_ids):
  """Each word tokenized on its own, as the original's featurize."""
  context = _Context([], [], [])
  for word_index, word in enumerate(doc_words):
    context.word_to_token.append(len(context.token_ids))
    context.token_ids.extend(token_ids[word])
    context.token_to_word.extend([word_index] * len(token_ids[word]))
  return context


def _answer_token_span(example, context, answer_ids):
  """The training answer's doc-token span; (-1, -1) when impossible."""
  if example.is_impossible:
    return -1, -1
  if example.start_word < 0:
    raise ValueError(f"example {example.qas_id!r} has no training answer: "
                     "read the file with is_training=True")
  start = context.word_to_token[example.start_word]
  if example.end_word < len(example.doc_words) - 1:
    end = context.word_to_token[example.end_word + 1] - 1
  else:
    end = len(context.token_ids) - 1
  return _improve_answer_span(context.token_ids, start, end, list(answer_ids))


def _improve_answer_span(doc_ids, start, end, answer_ids):
  """The first sub-span of [start, end] whose tokens are the answer's.

  Starts ascending, ends descending, as the original (token ids stand for
  the token strings: a vocabulary has no token twice). "(1895-1943)." -> "1895".
  """
  for new_start in range(start, end + 1):
    for new_end in range(end, new_start - 1, -1):
      if doc_ids[new_start:new_end + 1] == answer_ids:
        return new_start, new_end
  return start, end


def _doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
  """`(start, length)` of each window over the doc tokens."""
  spans = []
  start = 0
  while start < num_tokens:
    length = min(num_tokens - start, max_tokens_for_doc)
    spans.append((start, length))
    if start + length == num_tokens:
      break
    start += min(length, doc_stride)
  return spans


def _max_context_window(spans, num_tokens):
  """For each doc token, the window that gives it the most context.

  The original's `_check_is_max_context`: maximise `min(left, right) + 0.01 *
  window length`; on a tie the first window wins (its `>`, argmax's first).
  """
  scores = np.full([len(spans), num_tokens], -np.inf)
  for index, (start, length) in enumerate(spans):
    offsets = np.arange(length)
    scores[index, start:start + length] = (
        np.minimum(offsets, length - 1 - offsets) + 0.01 * length)
  return np.argmax(scores, axis=0)


def _window_maps(doc_offset, span, window_index, token_to_word, owners):
  """`token_to_orig_map` and `token_is_max_context` of one window."""
  start, length = span
  positions = range(doc_offset, doc_offset + length)
  token_to_orig_map = dict(zip(positions, token_to_word[start:start + length]))
  token_is_max_context = dict(zip(
      positions, (owners[start:start + length] == window_index).tolist()))
  return token_to_orig_map, token_is_max_context


def _example_windows(example_index, example, query, context, answer_span,
                     tokenizer, max_seq_length, doc_stride):
  """The windows of one example (labelled when `answer_span` is given)."""
  max_tokens_for_doc = max_seq_length - len(query) - 3
  if max_tokens_for_doc < 1:
    raise squad.SquadDataError(
        f"question {example.qas_id!r} keeps {len(query)} tokens, which leaves "
        f"{max_tokens_for_doc} of max_seq_length {max_seq_length} for its "
        "context (3 go to [CLS] and [SEP]): raise max_seq_length or lower "
        "max_query_length")
  num_tokens = len(context.token_ids)
  if not num_tokens:
    raise squad.SquadDataError(
        f"the context of question {example.qas_id!r} has no WordPiece tokens: "
        "remove the question or its paragraph")
  spans = _doc_spans(num_tokens, max_tokens_for_doc, doc_stride)
  if len(spans) >= _WINDOW_ID_FACTOR:
    raise squad.SquadDataError(
        f"the context of question {example.qas_id!r} needs {len(spans)} "
        f"windows (at most {_WINDOW_ID_FACTOR - 1}): raise doc_stride or "
        "max_seq_length")
  owners = _max_context_window(spans, num_tokens)
  doc_offset = len(query) + 2
  vocabulary = tokenizer.vocabulary
  windows = []
  for window_index, (start, length) in enumerate(spans):
    ids = ([tokenizer.cls_id] + query + [tokenizer.sep_id] +
           context.token_ids[start:start + length] + [tokenizer.sep_id])
    input_word_ids = np.zeros([max_seq_length], np.int32)
    input_word_ids[:len(ids)] = ids
    input_mask = np.zeros([max_seq_length], np.int32)
    input_mask[:len(ids)] = 1
    input_type_ids = np.zeros([max_seq_length], np.int32)
    input_type_ids[doc_offset:len(ids)] = 1
    start_position = end_position = 0
    if answer_span is not None and answer_span[0] >= start and (
        answer_span[1] <= start + length - 1) and not example.is_impossible:
      start_position = answer_span[0] - start + doc_offset
      end_position = answer_span[1] - start + doc_offset
    token_to_orig_map, token_is_max_context = _window_maps(
        doc_offset, (start, length), window_index, context.token_to_word,
        owners)
    windows.append(SquadWindow(
        unique_id=_WINDOW_ID_FACTOR * example_index + window_index,
        example_index=example_index, window_index=window_index,
        tokens=tuple(vocabulary[i] for i in ids),
        token_to_orig_map=token_to_orig_map,
        token_is_max_context=token_is_max_context,
        input_word_ids=input_word_ids, input_mask=input_mask,
        input_type_ids=input_type_ids, start_position=start_position,
        end_position=end_position, is_impossible=example.is_impossible))
  return windows


def stack_windows(windows: Sequence[SquadWindow]) -> dict:
  """The windows' model inputs and labels as arrays.

  Returns:
    `input_word_ids`, `input_mask`, `input_type_ids`: int32 `[n, seq]`;
    `start_positions`, `end_positions`: int32 `[n]`; `is_impossible`: float32
    `[n]`; `unique_ids`: int64 `[n]`.
  """
  if not windows:
    raise ValueError("stack_windows needs at least one window")
  return {
      "input_word_ids": np.stack([w.input_word_ids for w in windows]),
      "input_mask": np.stack([w.input_mask for w in windows]),
      "input_type_ids": np.stack([w.input_type_ids for w in windows]),
      "start_positions": np.array([w.start_position for w in windows],
                                  np.int32),
      "end_positions": np.array([w.end_position for w in windows], np.int32),
      "is_impossible": np.array([w.is_impossible for w in windows], np.float32),
      "unique_ids": np.array([w.unique_id for w in windows], np.int64),
  }


def windows_from_arrays(arrays: dict, example_token_to_word: Sequence,
                        tokenizer, max_seq_length: int,
                        doc_stride: int) -> list:
  """The windows `featurize` built, from their `stack_windows` arrays.

  What the arrays do not hold (each window's tokens, token -> word map and
  max-context flags) is recomputed by the code that built the windows.

  Args:
    arrays: `stack_windows`' arrays of every window of some examples, in
      example order.
    example_token_to_word: for each example, its context's word index of each
      doc token (a value of `featurize_with_word_maps`' `word_maps`).
    tokenizer: the `WordpieceTokenizer` the windows were built with.
    max_seq_length, doc_stride: the settings they were built with.

  Returns:
    The `SquadWindow`s, equal to `featurize`'s.

  Raises:
    ValueError: the arrays are not the windows of these settings.
  """
  vocabulary = tokenizer.vocabulary
  unique_ids = arrays["unique_ids"].tolist()
  windows = []
  row = 0
  while row < len(unique_ids):
    example_index = unique_ids[row] // _WINDOW_ID_FACTOR
    token_to_word = example_token_to_word[example_index]
    doc_offset = int(np.argmax(arrays["input_type_ids"][row] == 1))
    spans = _doc_spans(len(token_to_word), max_seq_length - doc_offset - 1,
                       doc_stride)
    owners = _max_context_window(spans, len(token_to_word))
    for window_index, span in enumerate(spans):
      if (row >= len(unique_ids) or unique_ids[row] !=
          _WINDOW_ID_FACTOR * example_index + window_index):
        raise ValueError(f"record {row} is not window {window_index} of "
                         f"example {example_index}")
      length = int(arrays["input_mask"][row].sum())
      if length != doc_offset + span[1] + 1:
        raise ValueError(f"record {row} has {length} tokens, not "
                         f"{doc_offset + span[1] + 1}")
      token_to_orig_map, token_is_max_context = _window_maps(
          doc_offset, span, window_index, token_to_word, owners)
      windows.append(SquadWindow(
          unique_id=unique_ids[row], example_index=example_index,
          window_index=window_index,
          tokens=tuple(vocabulary[token_id] for token_id in
                       arrays["input_word_ids"][row][:length].tolist()),
          token_to_orig_map=token_to_orig_map,
          token_is_max_context=token_is_max_context,
          input_word_ids=arrays["input_word_ids"][row],
          input_mask=arrays["input_mask"][row],
          input_type_ids=arrays["input_type_ids"][row],
          start_position=int(arrays["start_positions"][row]),
          end_position=int(arrays["end_positions"][row]),
          is_impossible=bool(arrays["is_impossible"][row])))
      row += 1
  return windows
