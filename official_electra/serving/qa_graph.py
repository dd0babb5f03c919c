"""SQuAD's prediction path in the graph, for the raw-text serving signature
(`qa_export`): contexts and questions in, the model's windows out
(`question_and_context_tokens`, `context_windows`, `pack_windows`), and the
model's outputs in, each context's best span out (`span_candidates`,
`valid_spans`, `best_spans`), as the original's Python does
(ELECTRA_REFERENCE_SQUAD.md sections 1 and 4; `data/squad_windows.py` and
`finetuning/squad_postprocessing.py`).

Everything is flat over the batch: words, tokens and windows are listed
context by context, with the row of the context they belong to.
"""

import tensorflow as tf

# The original's `is_whitespace`: space, tab, CR, LF and U+202F.
_WHITESPACE = (0x20, 0x09, 0x0D, 0x0A, 0x202F)
# Logit of the independent head's top-k slots past a short sequence.
_PAST_SEQUENCE_LOGIT = -1e9


def _row_splits(row_ids, num_rows):
  """int32 `[num_rows + 1]` splits of sorted row ids."""
  counts = tf.math.unsorted_segment_sum(tf.ones_like(row_ids), row_ids,
                                        num_rows)
  return tf.concat([[0], tf.cumsum(counts)], 0)


def gather_or(values, indices, valid, default):
  """`values[indices]` where `valid`, else `default` (any index allowed)."""
  padded = tf.concat([values, [default]], 0)
  return tf.gather(padded, tf.where(valid, indices, tf.size(values)))


def whitespace_words(contexts):
  """The original's whitespace words of each context, with their offsets.

  Args:
    contexts: tf.string `[batch]`, UTF-8.

  Returns:
    dict of int32 `[words]` (all contexts' words, context by context):
    `context` (the word's row), `char_start`, `char_end` (Unicode characters,
    end exclusive, within its context), `byte_start`, `byte_end` (UTF-8
    bytes).
  """
  chars, byte_offsets = tf.strings.unicode_decode_with_offsets(
      contexts, "UTF-8")
  codepoints = chars.flat_values
  row = tf.cast(chars.value_rowids(), tf.int32)
  row_starts = tf.cast(chars.row_splits, tf.int32)
  index = tf.range(tf.size(codepoints))
  is_first = tf.equal(index, tf.gather(row_starts, row))
  is_last = tf.equal(index, tf.gather(row_starts, row + 1) - 1)
  is_space = tf.reduce_any(
      tf.equal(codepoints[:, tf.newaxis], tf.constant(_WHITESPACE)), axis=1)
  space_before = tf.concat([[True], is_space], 0)[:-1] | is_first
  space_after = tf.concat([is_space, [True]], 0)[1:] | is_last
  first_chars = tf.cast(tf.where(~is_space & space_before)[:, 0], tf.int32)
  last_chars = tf.cast(tf.where(~is_space & space_after)[:, 0], tf.int32)
  byte_starts = tf.cast(byte_offsets.flat_values, tf.int32)
  byte_ends = tf.where(
      is_last, tf.gather(tf.strings.length(contexts), row),
      tf.concat([byte_starts, [0]], 0)[1:])
  word_context = tf.gather(row, first_chars)
  word_row_start = tf.gather(row_starts, word_context)
  return {"context": word_context,
          "char_start": first_chars - word_row_start,
          "char_end": last_chars + 1 - word_row_start,
          "byte_start": tf.gather(byte_starts, first_chars),
          "byte_end": tf.gather(byte_ends, last_chars)}


def question_and_context_tokens(tokenizer, max_query_length: int, question,
                                context):
  """Question and context tokens (flat, with splits) and the whitespace
  words of the contexts (`whitespace_words`); questions cut to
  `max_query_length` tokens."""
  words = whitespace_words(context)
  word_text = tf.strings.substr(tf.gather(context, words["context"]),
                                words["byte_start"],
                                words["byte_end"] - words["byte_start"])
  word_tokens = tokenizer.tokenize(word_text)
  token_word = tf.cast(word_tokens.value_rowids(), tf.int32)
  question_tokens = tokenizer.tokenize(question)
  return {
      "words": words,
      "doc_ids": word_tokens.flat_values,
      "token_word": token_word,
      "doc_splits": _row_splits(tf.gather(words["context"], token_word),
                                tf.size(context)),
      "query_ids": question_tokens.flat_values,
      "query_starts": tf.cast(question_tokens.row_starts(), tf.int32),
      "query_length": tf.minimum(
          tf.cast(question_tokens.row_lengths(), tf.int32),
          max_query_length),
  }


def context_windows(tokens, max_seq_length: int, doc_stride: int,
                    max_windows: int):
  """The windows of every context (the original's doc spans, advancing by
  `doc_stride`, at most `max_windows` a context), flattened in context
  order; every value is per window `[windows]`."""
  doc_length = tokens["doc_splits"][1:] - tokens["doc_splits"][:-1]
  max_doc = tf.maximum(max_seq_length - tokens["query_length"] - 3, 1)
  # Every window but the last holds max_doc tokens and advances by this.
  stride = tf.minimum(max_doc, doc_stride)
  num_windows = tf.minimum(
      1 + (tf.maximum(doc_length - max_doc, 0) + stride - 1) // stride,
      max_windows)
  window_index = tf.ragged.range(num_windows)
  context = tf.cast(window_index.value_rowids(), tf.int32)
  windows = {name: tf.gather(value, context) for name, value in (
      ("doc_length", doc_length), ("max_doc", max_doc), ("stride", stride),
      ("num_windows", num_windows), ("query_length", tokens["query_length"]),
      ("doc_start", tokens["doc_splits"][:-1]),
      ("query_start", tokens["query_starts"]))}
  windows["context"] = context
  windows["index"] = window_index.flat_values
  windows["start"] = windows["index"] * windows["stride"]
  windows["length"] = tf.minimum(windows["doc_length"] - windows["start"],
                                 windows["max_doc"])
  windows["doc_offset"] = windows["query_length"] + 2
  return windows


def pack_windows(tokenizer, tokens, windows):
  """`[CLS] question [SEP] window [SEP]` of every window, padded to the
  longest (at most the windows' `max_seq_length`): the model's inputs."""
  def column(name):
    return windows[name][:, tf.newaxis]

  doc_end = column("doc_offset") + column("length")
  lengths = windows["doc_offset"] + windows["length"] + 1
  position = tf.range(tf.reduce_max(tf.concat([lengths, [1]], 0)))[
      tf.newaxis, :]
  in_query = (position >= 1) & (position <= column("query_length"))
  in_doc = (position >= column("doc_offset")) & (position < doc_end)
  query_ids = gather_or(tokens["query_ids"],
                         column("query_start") + position - 1, in_query,
                         tokenizer.pad_id)
  doc_ids = gather_or(
      tokens["doc_ids"],
      column("doc_start") + column("start") + position - column("doc_offset"),
      in_doc, tokenizer.pad_id)
  is_sep = (position == column("query_length") + 1) | (position == doc_end)
  ids = tf.where(in_query, query_ids, tf.where(in_doc, doc_ids, tf.where(
      is_sep, tokenizer.sep_id, tokenizer.pad_id)))
  mask = position < lengths[:, tf.newaxis]
  return {"input_word_ids": tf.where(position == 0, tokenizer.cls_id,
                                     ids),
          "input_mask": tf.cast(mask, tf.int32),
          "input_type_ids": tf.cast(
              mask & (position >= column("doc_offset")), tf.int32)}


def span_candidates(outputs, joint_prediction: bool, n_best_size: int):
  """`(starts, ends, scores)`, `[windows, candidates]`, of the span
  labeler's prediction `outputs` in the original's order (start
  candidates, then their end candidates): the joint head's beams, or the
  independent head's `n_best_size` best starts times best ends."""
  if joint_prediction:
    ends = outputs["end_top_index"]
    starts = tf.broadcast_to(outputs["start_top_index"][:, :, tf.newaxis],
                             tf.shape(ends))
    scores = (outputs["start_top_log_probs"][:, :, tf.newaxis] +
              outputs["end_top_log_probs"])
  else:
    start_logits, starts = _top_k(outputs["start_logits"],
                                  n_best_size)
    end_logits, ends = _top_k(outputs["end_logits"],
                              n_best_size)
    scores = start_logits[:, :, tf.newaxis] + end_logits[:, tf.newaxis, :]
    starts = tf.broadcast_to(starts[:, :, tf.newaxis], tf.shape(scores))
    ends = tf.broadcast_to(ends[:, tf.newaxis, :], tf.shape(scores))
  num_windows = tf.shape(scores)[0]
  return (tf.reshape(starts, [num_windows, -1]),
          tf.reshape(ends, [num_windows, -1]),
          tf.reshape(scores, [num_windows, -1]))


def valid_spans(windows, starts, ends, max_answer_length: int):
  """The original's rules: start and end are context tokens, the start's
  window is its max-context one, end >= start, at most
  `max_answer_length` tokens."""
  doc_offset = windows["doc_offset"][:, tf.newaxis]
  doc_end = doc_offset + windows["length"][:, tf.newaxis]

  def in_doc(position):
    return (position >= doc_offset) & (position < doc_end)

  return (in_doc(starts) & in_doc(ends) & (ends >= starts) &
          (ends - starts + 1 <= max_answer_length) &
          is_max_context(windows, starts))


def best_spans(windows, starts, ends, scores, valid, batch):
  """Each context's best valid candidate over all its windows (ties: the
  first in window, then candidate order).

  Returns:
    `(has_span, score, window, start, end)`, `[batch]`: whether one
    exists, its score, its window's row and its packed positions (row 0's
    candidate 0 where none).
  """
  flat_scores = tf.reshape(tf.where(valid, scores, -float("inf")), [-1])
  flat_context = tf.reshape(tf.broadcast_to(
      windows["context"][:, tf.newaxis], tf.shape(scores)), [-1])
  best_score = tf.math.unsorted_segment_max(flat_scores, flat_context, batch)
  count = tf.size(flat_scores)
  is_best = tf.reshape(valid, [-1]) & tf.equal(
      flat_scores, tf.gather(best_score, flat_context))
  first_best = tf.math.unsorted_segment_min(
      tf.where(is_best, tf.range(count), count), flat_context, batch)
  has_span = first_best < count
  chosen = tf.where(has_span, first_best, 0)
  return (has_span, tf.where(has_span, best_score, 0.0),
          chosen // tf.maximum(tf.shape(scores)[1], 1),
          tf.gather(tf.reshape(starts, [-1]), chosen),
          tf.gather(tf.reshape(ends, [-1]), chosen))


def _top_k(logits, k):
  """`tf.math.top_k` over positions, padded past a sequence shorter than `k`
  (never a valid span: their index is past the sequence)."""
  shortfall = tf.maximum(k - tf.shape(logits)[1], 0)
  return tf.math.top_k(tf.pad(logits, [[0, 0], [0, shortfall]],
                              constant_values=_PAST_SEQUENCE_LOGIT), k=k)


def is_max_context(windows, starts):
  """Whether each candidate start's window gives it its most context (the
  original's `_checkis_max_context` over the context's windows):
  `min(left, right) + 0.01 * length` highest, the first window on a tie.

  Args:
    windows: `context_windows`' values.
    starts: int32 `[windows, candidates]` packed positions.

  Returns:
    bool `[windows, candidates]` (meaningless for non-context positions).
  """
  def score(window_start, window_length, token):
    left_right = tf.minimum(token - window_start,
                            window_start + window_length - 1 - token)
    # float64 as the original's numpy arithmetic, so ties tie alike.
    return (tf.cast(left_right, tf.float64) +
            0.01 * tf.cast(window_length, tf.float64))

  def of_window(name):
    return windows[name][:, tf.newaxis, tf.newaxis]

  token = (of_window("start") + starts[:, :, tf.newaxis] -
           of_window("doc_offset"))
  own_score = score(of_window("start"), of_window("length"), token)
  # Every window of the candidate's context: [windows, 1, most windows].
  most = tf.reduce_max(tf.concat([windows["num_windows"], [1]], 0))
  other = tf.range(most)[tf.newaxis, tf.newaxis, :]
  other_start = other * of_window("stride")
  other_length = tf.minimum(of_window("doc_length") - other_start,
                            of_window("max_doc"))
  other_score = score(other_start, other_length, token)
  contains = ((other < of_window("num_windows")) & (other_start <= token) &
              (token < other_start + other_length))
  beats = contains & ((other_score > own_score) | (
      (other_score == own_score) & (other < of_window("index"))))
  return ~tf.reduce_any(beats, axis=-1)
