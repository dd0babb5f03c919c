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
`finetuning/squad_postprocessing.py` do in Python) in the graph
(`qa_graph.py`): the context
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
from official_electra.serving import qa_graph
from official_electra.tokenization import wordpiece_tokenizer

ExportError = finetuned_runs.ExportError
# Windows per context the raw-text signature reads at most.
MAX_WINDOWS = 32


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

  def serve_text(self, question, context):
    served = self._served
    tokens = qa_graph.question_and_context_tokens(
        self.tokenizer, served.max_query_length, question, context)
    windows = qa_graph.context_windows(tokens, self._max_seq_length,
                                       served.doc_stride, self._max_windows)
    outputs = self.span_labeler(
        qa_graph.pack_windows(self.tokenizer, tokens, windows),
        training=False)
    starts, ends, scores = qa_graph.span_candidates(
        outputs, served.joint_prediction, served.n_best_size)
    batch = tf.size(context)
    has_span, score, window, start, end = qa_graph.best_spans(
        windows, starts, ends, scores,
        qa_graph.valid_spans(windows, starts, ends, served.max_answer_length),
        batch)

    def word_of(position):
      token = tf.gather(windows["doc_start"] + windows["start"] -
                        windows["doc_offset"], window) + position
      return qa_graph.gather_or(tokens["token_word"], token, has_span, 0)

    words = tokens["words"]
    first_word, last_word = word_of(start), word_of(end)
    byte_start = tf.where(has_span, tf.gather(words["byte_start"], first_word),
                          0)
    byte_end = tf.where(has_span, tf.gather(words["byte_end"], last_word), 0)
    answer = {
        "answer": tf.strings.substr(context, byte_start, byte_end - byte_start),
        "answer_start": tf.where(
            has_span, tf.gather(words["char_start"], first_word), -1),
        "answer_end": tf.where(
            has_span, tf.gather(words["char_end"], last_word), -1),
        "score": score,
    }
    if served.has_null_score:
      if served.answerable_classifier:
        null_score = tf.math.unsorted_segment_min(
            outputs["answerable_logit"], windows["context"], batch)
      else:
        null_score = tf.math.unsorted_segment_min(
            outputs["start_logits"][:, 0] + outputs["end_logits"][:, 0],
            windows["context"], batch) - score
      answer["null_score"] = null_score
      answer["has_answer"] = null_score <= served.null_threshold
    return answer

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
