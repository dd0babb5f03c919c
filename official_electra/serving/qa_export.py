"""A TF Serving SavedModel of a fine-tuned SQuAD model: raw question and context
in, the answer's text and character span out.

Two signatures:
  `serving_default`: `question`, `context` (tf.string `[batch]`) ->
    `answer` (tf.string `[batch]`), `answer_start`, `answer_end` (int32
    `[batch]`: character offsets into the context, end exclusive, so
    `context[answer_start:answer_end] == answer`; -1 and -1 with answer ""
    when no span qualifies), `score` (float32 `[batch]`: the span's start +
    end log-probability for the joint head, start + end logit for the
    independent one; 0 without a span, as the original's "empty" entry) and,
    for a SQuAD 2.0 model, `null_score` (float32 `[batch]`: with the
    answerability classifier the minimum over the windows of its no-answer
    logit; without it, for the independent head, the minimum over the
    windows of the `[CLS]` start + end logits minus `score`) and `has_answer`
    (bool `[batch]`: `null_score` <= the recorded `null_threshold`, -2.75 by
    default). A 2.0 joint head without the classifier has no null score.
  `serve_token_ids`: `input_word_ids`, `input_mask`, `input_type_ids` (int32
    `[batch, seq_len]`) -> the span labeler's prediction outputs
    (`start_top_log_probs`, ... for the joint head; `start_logits`,
    `end_logits` for the independent one; `answerable_logit` with the
    classifier).

The raw-text signature runs the original's prediction path
(ELECTRA_REFERENCE_SQUAD.md sections 1 and 4, as `data/squad_windows.py` and
`finetuning/squad_postprocessing.py` do in Python) in the graph: the context
split into whitespace words (space, tab, CR, LF, U+202F) with their character
offsets; each word tokenized on its own by the project's tokenizer; the
question's first `max_query_length` tokens; `[CLS] question [SEP] window
[SEP]` windows advancing by the recorded `doc_stride`, at most `max_windows`
per context (32 by default: over 4,000 context tokens at length 512;
tokens past the last window are never answers, and the max-context rule
compares the windows kept); the model on every window of the batch; and the
original's candidates (the joint head's beams, or the independent head's
`n_best_size` best starts times best ends) kept when start and end are
context tokens, the start's window gives it its maximum context, end >=
start and the span has at most `max_answer_length` tokens; the best score
over all windows of a context wins (ties: the earlier window, then the
earlier candidate, as the original's stable sort).

Not done in the graph: the Python post-processing's `get_final_text`, which
trims the span's words to the WordPiece text (e.g. drops a trailing "'s" or
a bracket): the answer is the context from the first character of the
span's first word to the last character of its last word (the original's
`orig_text`, with the context's own whitespace between the words where
`orig_text` joins them by one space).

Written to a temporary folder, checked with
`op_allowlist.check_serving_op_types`, renamed into place. Serving from
Python requires `import tensorflow_text` first (the tokenizer's ops).
"""

import dataclasses
import os
import tensorflow as tf

from official_electra.modeling import errors
from official_electra.modeling import span_labeler_checkpoint
from official_electra.serving import finetuned_runs
from official_electra.serving import op_allowlist
from official_electra.tokenization import wordpiece_tokenizer

ExportError = finetuned_runs.ExportError
# Windows per context the raw-text signature reads at most.
MAX_WINDOWS = 32
# The original's `is_whitespace`: space, tab, CR, LF and U+202F.
_WHITESPACE = (0x20, 0x09, 0x0D, 0x0A, 0x202F)
# Logit of the independent head's top-k slots past a short sequence.
_PAST_SEQUENCE_LOGIT = -1e9


@dataclasses.dataclass(frozen=True)
class ServedSquad:
  """What the raw-text signature needs of a seed folder's description.

  Attributes:
    version: "1.1" or "2.0".
    joint_prediction, answerable_classifier: the head's.
    doc_stride, max_query_length, n_best_size, max_answer_length,
      null_threshold: the recorded SQuAD settings.
  """
  version: str
  joint_prediction: bool
  answerable_classifier: bool
  doc_stride: int
  max_query_length: int
  n_best_size: int
  max_answer_length: int
  null_threshold: float

  @classmethod
  def from_description(cls, description: dict) -> "ServedSquad":
    settings = description["settings"]
    head = description["head"]
    return cls(version=description["version"],
               joint_prediction=bool(head["joint_prediction"]),
               answerable_classifier=bool(head["answerable_classifier"]),
               doc_stride=int(settings["doc_stride"]),
               max_query_length=int(settings["max_query_length"]),
               n_best_size=int(settings["n_best_size"]),
               max_answer_length=int(settings["max_answer_length"]),
               null_threshold=float(settings["null_threshold"]))

  @property
  def has_null_score(self) -> bool:
    return self.version == "2.0" and (self.answerable_classifier or
                                      not self.joint_prediction)


def _row_splits(row_ids, num_rows):
  """int32 `[num_rows + 1]` splits of sorted row ids."""
  counts = tf.math.unsorted_segment_sum(tf.ones_like(row_ids), row_ids,
                                        num_rows)
  return tf.concat([[0], tf.cumsum(counts)], 0)


def _gather_or(values, indices, valid, default):
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


class QuestionAnsweringServingModule(tf.Module):
  """The span labeler, its tokenizer and the SQuAD windowing, with the two
  serving signatures (the module docstring lists them).

  Args:
    span_labeler: a built `ElectraSpanLabeler`.
    tokenizer: the `WordpieceTokenizer` it was fine-tuned with.
    served: its `ServedSquad`.
    max_seq_length: the windows' length (the fine-tuning one).
    max_windows: windows read per context at most.
  """

  def __init__(self, span_labeler, tokenizer, served: ServedSquad,
               max_seq_length: int, max_windows: int = MAX_WINDOWS):
    super().__init__(name="squad_span_labeler")
    if max_windows < 1:
      raise ValueError(f"max_windows must be positive, got {max_windows}")
    self.span_labeler = span_labeler
    self.tokenizer = tokenizer
    self._served = served
    self._max_seq_length = max_seq_length
    self._max_windows = max_windows

  def serve_token_ids(self, input_word_ids, input_mask, input_type_ids):
    return dict(self.span_labeler({"input_word_ids": input_word_ids,
                                   "input_mask": input_mask,
                                   "input_type_ids": input_type_ids},
                                  training=False))

  def _tokens(self, question, context):
    """Question and context tokens (flat, with splits) and the words."""
    words = whitespace_words(context)
    word_text = tf.strings.substr(tf.gather(context, words["context"]),
                                  words["byte_start"],
                                  words["byte_end"] - words["byte_start"])
    word_tokens = self.tokenizer.tokenize(word_text)
    token_word = tf.cast(word_tokens.value_rowids(), tf.int32)
    question_tokens = self.tokenizer.tokenize(question)
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
            self._served.max_query_length),
    }

  def _windows(self, tokens):
    """The windows of every context (the original's doc spans), flattened
    in context order; every value is per window `[windows]`."""
    doc_length = tokens["doc_splits"][1:] - tokens["doc_splits"][:-1]
    max_doc = tf.maximum(self._max_seq_length - tokens["query_length"] - 3, 1)
    # Every window but the last holds max_doc tokens and advances by this.
    stride = tf.minimum(max_doc, self._served.doc_stride)
    num_windows = tf.minimum(
        1 + (tf.maximum(doc_length - max_doc, 0) + stride - 1) // stride,
        self._max_windows)
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

  def _pack(self, tokens, windows):
    """`[CLS] question [SEP] window [SEP]` of every window, padded to the
    longest (at most `max_seq_length`)."""
    def column(name):
      return windows[name][:, tf.newaxis]

    doc_end = column("doc_offset") + column("length")
    lengths = windows["doc_offset"] + windows["length"] + 1
    position = tf.range(tf.reduce_max(tf.concat([lengths, [1]], 0)))[
        tf.newaxis, :]
    in_query = (position >= 1) & (position <= column("query_length"))
    in_doc = (position >= column("doc_offset")) & (position < doc_end)
    query_ids = _gather_or(tokens["query_ids"],
                           column("query_start") + position - 1, in_query,
                           self.tokenizer.pad_id)
    doc_ids = _gather_or(
        tokens["doc_ids"],
        column("doc_start") + column("start") + position - column("doc_offset"),
        in_doc, self.tokenizer.pad_id)
    is_sep = (position == column("query_length") + 1) | (position == doc_end)
    ids = tf.where(in_query, query_ids, tf.where(in_doc, doc_ids, tf.where(
        is_sep, self.tokenizer.sep_id, self.tokenizer.pad_id)))
    mask = position < lengths[:, tf.newaxis]
    return {"input_word_ids": tf.where(position == 0, self.tokenizer.cls_id,
                                       ids),
            "input_mask": tf.cast(mask, tf.int32),
            "input_type_ids": tf.cast(
                mask & (position >= column("doc_offset")), tf.int32)}

  def _candidates(self, outputs):
    """`(starts, ends, scores)`, `[windows, candidates]`, in the original's
    order (start candidates, then their end candidates)."""
    if self._served.joint_prediction:
      ends = outputs["end_top_index"]
      starts = tf.broadcast_to(outputs["start_top_index"][:, :, tf.newaxis],
                               tf.shape(ends))
      scores = (outputs["start_top_log_probs"][:, :, tf.newaxis] +
                outputs["end_top_log_probs"])
    else:
      start_logits, starts = _top_k(outputs["start_logits"],
                                    self._served.n_best_size)
      end_logits, ends = _top_k(outputs["end_logits"],
                                self._served.n_best_size)
      scores = start_logits[:, :, tf.newaxis] + end_logits[:, tf.newaxis, :]
      starts = tf.broadcast_to(starts[:, :, tf.newaxis], tf.shape(scores))
      ends = tf.broadcast_to(ends[:, tf.newaxis, :], tf.shape(scores))
    num_windows = tf.shape(scores)[0]
    return (tf.reshape(starts, [num_windows, -1]),
            tf.reshape(ends, [num_windows, -1]),
            tf.reshape(scores, [num_windows, -1]))

  def _valid(self, windows, starts, ends):
    """The original's rules: start and end are context tokens, the start's
    window is its max-context one, end >= start, at most
    `max_answer_length` tokens."""
    doc_offset = windows["doc_offset"][:, tf.newaxis]
    doc_end = doc_offset + windows["length"][:, tf.newaxis]

    def in_doc(position):
      return (position >= doc_offset) & (position < doc_end)

    return (in_doc(starts) & in_doc(ends) & (ends >= starts) &
            (ends - starts + 1 <= self._served.max_answer_length) &
            _is_max_context(windows, starts))

  def _best_spans(self, windows, starts, ends, scores, valid, batch):
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

  def serve_text(self, question, context):
    tokens = self._tokens(question, context)
    windows = self._windows(tokens)
    outputs = self.span_labeler(self._pack(tokens, windows), training=False)
    starts, ends, scores = self._candidates(outputs)
    batch = tf.size(context)
    has_span, score, window, start, end = self._best_spans(
        windows, starts, ends, scores, self._valid(windows, starts, ends),
        batch)

    def word_of(position):
      token = tf.gather(windows["doc_start"] + windows["start"] -
                        windows["doc_offset"], window) + position
      return _gather_or(tokens["token_word"], token, has_span, 0)

    words = tokens["words"]
    first_word, last_word = word_of(start), word_of(end)
    byte_start = tf.where(has_span, tf.gather(words["byte_start"], first_word),
                          0)
    byte_end = tf.where(has_span, tf.gather(words["byte_end"], last_word), 0)
    served = {
        "answer": tf.strings.substr(context, byte_start, byte_end - byte_start),
        "answer_start": tf.where(
            has_span, tf.gather(words["char_start"], first_word), -1),
        "answer_end": tf.where(
            has_span, tf.gather(words["char_end"], last_word), -1),
        "score": score,
    }
    if self._served.has_null_score:
      if self._served.answerable_classifier:
        null_score = tf.math.unsorted_segment_min(
            outputs["answerable_logit"], windows["context"], batch)
      else:
        null_score = tf.math.unsorted_segment_min(
            outputs["start_logits"][:, 0] + outputs["end_logits"][:, 0],
            windows["context"], batch) - score
      served["null_score"] = null_score
      served["has_answer"] = null_score <= self._served.null_threshold
    return served

  def signatures(self):
    """`{name: concrete function}` for `tf.saved_model.save`."""
    ids_spec = tf.TensorSpec([None, None], tf.int32)
    text_spec = tf.TensorSpec([None], tf.string)
    return {
        "serving_default": tf.function(self.serve_text).get_concrete_function(
            question=text_spec, context=text_spec),
        "serve_token_ids": tf.function(
            self.serve_token_ids).get_concrete_function(
                input_word_ids=ids_spec, input_mask=ids_spec,
                input_type_ids=ids_spec),
    }


def _top_k(logits, k):
  """`tf.math.top_k` over positions, padded past a sequence shorter than `k`
  (never a valid span: their index is past the sequence)."""
  shortfall = tf.maximum(k - tf.shape(logits)[1], 0)
  return tf.math.top_k(tf.pad(logits, [[0, 0], [0, shortfall]],
                              constant_values=_PAST_SEQUENCE_LOGIT), k=k)


def _is_max_context(windows, starts):
  """Whether each candidate start's window gives it its most context (the
  original's `_check_is_max_context` over the context's windows):
  `min(left, right) + 0.01 * length` highest, the first window on a tie.

  Args:
    windows: `QuestionAnsweringServingModule._windows`' values.
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


def load_finetuned_run(run_dir: str):
  """Rebuilds `(span_labeler, tokenizer, ServedSquad, max_seq_length)` from a
  SQuAD seed folder.

  Raises:
    ExportError: not a span extraction seed folder, or unusable.
  """
  try:
    span_labeler, description = span_labeler_checkpoint.load_span_labeler(
        run_dir)
    served = ServedSquad.from_description(description)
  except errors.CheckpointError as error:
    raise ExportError(str(error)) from None
  except (KeyError, TypeError, ValueError) as error:
    raise ExportError(
        f"{run_dir}: its model_config.json's finetuned section lacks a SQuAD "
        f"setting ({errors.first_line(error)}); fine-tune again") from None
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(
      os.path.join(run_dir, description["vocab_file"]),
      lower_case=description["lower_case"])
  return span_labeler, tokenizer, served, description["max_seq_length"]


def export_question_answering(finetuned_dir: str, export_dir: str,
                              max_windows: int = MAX_WINDOWS) -> str:
  """Writes the question-answering SavedModel of a SQuAD run to `export_dir`.

  Args:
    finetuned_dir: a SQuAD seed folder, its task folder or the fine-tuning
      `--model_dir` when that holds one task (`finetuned_runs`).
    export_dir: the SavedModel folder to create (for TF Serving, a numbered
      version folder such as `models/squad/1`); it must not exist yet.
    max_windows: windows the raw-text signature reads per context.

  Returns:
    The seed folder that was exported.

  Raises:
    ExportError: unusable input (not a SQuAD run), or `export_dir` exists.
    op_allowlist.UnservableOpsError: the graph needs ops TF Serving lacks.
  """
  run_dir = finetuned_runs.run_to_export(finetuned_dir, export_dir)
  span_labeler, tokenizer, served, max_seq_length = load_finetuned_run(run_dir)
  module = QuestionAnsweringServingModule(
      span_labeler, tokenizer, served, max_seq_length, max_windows)
  op_allowlist.save_servable(module, export_dir)
  return run_dir
