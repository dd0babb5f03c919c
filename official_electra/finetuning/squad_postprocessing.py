"""SQuAD predictions from the span head's outputs, as the original writes them.

Follows `SpanBasedQAScorer.write_predictions` of the original's
`finetune/qa/qa_metrics.py` (ELECTRA_REFERENCE_SQUAD.md section 4): the
candidate spans of all windows of a question are pooled and ranked, invalid
ones dropped, the n-best distinct texts mapped back to the context's
characters (`get_final_text`), and for SQuAD 2.0 a null score kept per
question. The official evaluation (`squad_metrics.py`) reads the files
`write_prediction_files` writes.

The n-best list is also written (`nbest_predictions.json`), which the original
builds but never saves.
"""

import collections
import dataclasses
import functools
import os
import unicodedata
from typing import Optional, Sequence

import numpy as np

from official_electra import files

EMPTY_PREDICTION = "empty"
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
               (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
               (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


@dataclasses.dataclass
class SquadPredictions:
  """What post-processing gives for each question (keyed by `qas_id`).

  Attributes:
    predictions: the best non-null answer text (v1.1 and v2.0 alike, as the
      original; "empty" when no span survives).
    null_odds: v2.0 only (else None): the null score, a logit; the original's
      evaluation predicts "" when it exceeds its threshold (-2.75).
    nbest: up to `n_best_size` entries `{"text", "probability", "start_logit",
      "end_logit"}`, best first (the joint head's "logits" are log-probs).
  """
  predictions: dict
  null_odds: Optional[dict]
  nbest: dict


@dataclasses.dataclass(frozen=True)
class _Candidate:
  row: int
  start: int
  end: int
  start_logit: float
  end_logit: float


def postprocess(examples: Sequence, windows: Sequence, outputs: dict, *,
                joint_prediction: bool, version: str, n_best_size: int = 20,
                max_answer_length: int = 30,
                lower_case: bool = True) -> SquadPredictions:
  """The predictions of each example from its windows' outputs.

  Args:
    examples: `SquadExample`s, as given to `featurize`.
    windows: their `SquadWindow`s (`window.example_index` indexes `examples`).
    outputs: the span head's arrays, row i for `windows[i]`: joint head
      `start_top_log_probs` [n, K], `start_top_index` [n, K],
      `end_top_log_probs` [n, K, K], `end_top_index` [n, K, K]; independent
      head `start_logits`, `end_logits` [n, seq]; v2.0 `answerable_logit` [n]
      (else `start_logits` and `end_logits` for the null score).
    joint_prediction: which head made `outputs`.
    version: "1.1" or "2.0".
    n_best_size: start and end candidates per window of the independent head,
      and texts kept per question (the original: 20).
    max_answer_length: longest span in tokens (the original: 30).
    lower_case: the tokenizer's casing, for `get_final_text`.

  Returns:
    `SquadPredictions`.

  Raises:
    ValueError: `outputs` lack an array or do not match `windows`, or an
      example has no window.
  """
  if version not in ("1.1", "2.0"):
    raise ValueError(f"version must be '1.1' or '2.0', not {version!r}")
  outputs = {name: np.asarray(value) for name, value in outputs.items()}
  _check_outputs(outputs, len(windows), joint_prediction, version)
  rows_of_example = collections.defaultdict(list)
  for row, window in enumerate(windows):
    rows_of_example[window.example_index].append(row)
  predictions, nbest = {}, {}
  null_odds = {} if version == "2.0" else None
  for example_index, example in enumerate(examples):
    rows = rows_of_example.get(example_index)
    if not rows:
      raise ValueError(f"example {example.qas_id!r} (index {example_index}) "
                       "has no window")
    candidates = []
    for row in rows:
      candidates.extend(_window_candidates(
          windows[row], row, outputs, joint_prediction, n_best_size,
          max_answer_length))
    candidates.sort(key=lambda c: c.start_logit + c.end_logit, reverse=True)
    entries = _nbest_entries(example, windows, candidates, n_best_size,
                             lower_case)
    best = next((entry for entry in entries if entry["text"]), entries[0])
    predictions[example.qas_id] = best["text"]
    nbest[example.qas_id] = entries
    if null_odds is not None:
      null_odds[example.qas_id] = _null_score(outputs, rows, best)
  return SquadPredictions(predictions=predictions, null_odds=null_odds,
                          nbest=nbest)


def _check_outputs(outputs, num_windows, joint_prediction, version):
  names = (["start_top_log_probs", "start_top_index", "end_top_log_probs",
            "end_top_index"] if joint_prediction else
           ["start_logits", "end_logits"])
  if version == "2.0" and "answerable_logit" not in outputs:
    names += ["start_logits", "end_logits"]
  for name in names:
    if name not in outputs:
      raise ValueError(f"outputs lack {name!r} (joint_prediction="
                       f"{joint_prediction}, version {version})")
    if len(outputs[name]) != num_windows:
      raise ValueError(f"outputs[{name!r}] has {len(outputs[name])} rows for "
                       f"{num_windows} windows")


def _best_indexes(logits, n_best_size):
  """The `n_best_size` highest positions, ties by position (a stable sort)."""
  return np.argsort(-np.asarray(logits), kind="stable")[:n_best_size]


def _window_candidates(window, row, outputs, joint_prediction, n_best_size,
                       max_answer_length):
  """The window's (start, end) pairs the original keeps, in its order."""
  if joint_prediction:
    ends = np.asarray(outputs["end_top_index"][row])
    starts = np.broadcast_to(
        np.asarray(outputs["start_top_index"][row])[:, None], ends.shape)
    start_logits = np.broadcast_to(
        np.asarray(outputs["start_top_log_probs"][row])[:, None], ends.shape)
    end_logits = np.asarray(outputs["end_top_log_probs"][row])
  else:
    all_start_logits = np.asarray(outputs["start_logits"][row])
    all_end_logits = np.asarray(outputs["end_logits"][row])
    starts, ends = np.meshgrid(_best_indexes(all_start_logits, n_best_size),
                               _best_indexes(all_end_logits, n_best_size),
                               indexing="ij")
    start_logits = all_start_logits[starts]
    end_logits = all_end_logits[ends]
  starts, ends = starts.reshape(-1), ends.reshape(-1)
  start_logits, end_logits = start_logits.reshape(-1), end_logits.reshape(-1)
  keep = np.flatnonzero(_valid_spans(window, starts, ends, max_answer_length))
  return [_Candidate(row, int(starts[i]), int(ends[i]), start_logits[i],
                     end_logits[i]) for i in keep]


def _valid_spans(window, starts, ends, max_answer_length):
  """The original's drop rules, as a mask over candidate spans."""
  num_tokens = len(window.tokens)
  size = max([num_tokens, *window.token_to_orig_map,
              *window.token_is_max_context]) + 2
  is_doc_token = np.zeros([size], bool)
  is_doc_token[list(window.token_to_orig_map)] = True
  is_max_context = np.zeros([size], bool)
  is_max_context[[position for position, is_max in
                  window.token_is_max_context.items() if is_max]] = True

  def lookup(table, positions):
    # Positions outside the table (negative ones too) read its last slot,
    # which is always False.
    return table[np.where((positions >= 0) & (positions < size), positions,
                          size - 1)]

  return ((starts < num_tokens) & (ends < num_tokens) & (starts != 0) &
          lookup(is_doc_token, starts) & lookup(is_doc_token, ends) &
          lookup(is_max_context, starts) & (ends >= starts) &
          (ends - starts + 1 <= max_answer_length))


def _nbest_entries(example, windows, candidates, n_best_size, lower_case):
  """Up to `n_best_size` distinct final texts, best first, and their
  probabilities."""
  chosen = []
  seen_texts = set()
  for candidate in candidates:
    if len(chosen) >= n_best_size:
      break
    text = _candidate_text(example, windows[candidate.row], candidate,
                           lower_case)
    if text in seen_texts:
      continue
    seen_texts.add(text)
    chosen.append((text, float(candidate.start_logit),
                   float(candidate.end_logit)))
  if not chosen:
    chosen.append((EMPTY_PREDICTION, 0.0, 0.0))
  scores = np.array([start + end for _, start, end in chosen], np.float64)
  probabilities = np.exp(scores - scores.max())
  probabilities /= probabilities.sum()
  return [{"text": text, "probability": float(probability),
           "start_logit": start, "end_logit": end}
          for (text, start, end), probability in zip(chosen, probabilities)]


def _candidate_text(example, window, candidate, lower_case):
  """The span's text in the context (`tok_text` aligned onto `orig_text`)."""
  tok_text = " ".join(window.tokens[candidate.start:candidate.end + 1])
  tok_text = tok_text.replace(" ##", "").replace("##", "")
  tok_text = " ".join(tok_text.split())
  first_word = window.token_to_orig_map[candidate.start]
  last_word = window.token_to_orig_map[candidate.end]
  orig_text = " ".join(example.doc_words[first_word:last_word + 1])
  return get_final_text(tok_text, orig_text, lower_case)


def _null_score(outputs, rows, best):
  """The original's v2.0 null score of one question.

  With the answerability classifier: the minimum over the windows of its
  (no-answer) logit. Without: the minimum over the windows of start_logits[0]
  + end_logits[0], minus the best non-null span's score.
  """
  if "answerable_logit" in outputs:
    return float(min(outputs["answerable_logit"][row] for row in rows))
  score_null = min(
      outputs["start_logits"][row][0] + outputs["end_logits"][row][0]
      for row in rows)
  return float(score_null - best["start_logit"] - best["end_logit"])


def get_final_text(pred_text: str, orig_text: str, lower_case: bool) -> str:
  """`pred_text` (normalised WordPiece text) as the slice of `orig_text` it is.

  The original's heuristic: BERT's basic tokenizer re-tokenises `orig_text`;
  `pred_text` is found in it; the characters of both, spaces removed, are
  aligned one to one. E.g. ("steve smith", "Steve Smith's") -> "Steve Smith".
  Any failure (not found, lengths differ after removing spaces, an end that
  does not map) returns `orig_text`.
  """
  tok_text = " ".join(basic_tokenize(orig_text, lower_case))
  start = tok_text.find(pred_text)
  if start == -1:
    return orig_text
  end = start + len(pred_text) - 1
  orig_chars, orig_positions = _without_spaces(orig_text)
  tok_chars, tok_positions = _without_spaces(tok_text)
  if len(orig_chars) != len(tok_chars):
    return orig_text
  tok_position_to_char = {position: index
                          for index, position in enumerate(tok_positions)}
  if start not in tok_position_to_char or end not in tok_position_to_char:
    return orig_text
  orig_start = orig_positions[tok_position_to_char[start]]
  orig_end = orig_positions[tok_position_to_char[end]]
  return orig_text[orig_start:orig_end + 1]


def _without_spaces(text):
  """`text` without " " and, for each kept character, its position in `text`."""
  positions = [index for index, char in enumerate(text) if char != " "]
  return "".join(text[index] for index in positions), positions


def basic_tokenize(text: str, lower_case: bool) -> list:
  """BERT's `BasicTokenizer.tokenize` (the original's model/tokenization.py).

  Drops NUL, U+FFFD and control/format characters (Unicode C*), turns
  whitespace (Zs, tab, CR, LF) into spaces, spaces out CJK ideographs, splits
  on whitespace; when `lower_case`, lower-cases and strips accents (NFD without
  Mn); then splits every punctuation character (Unicode P* and ASCII
  symbols) into its own token.
  """
  cleaned = []
  for char in text:
    kind = _char_kind(char)
    if kind == _SPACE:
      cleaned.append(" ")
    elif kind == _CJK:
      cleaned.append(f" {char} ")
    elif kind != _DROPPED:
      cleaned.append(char)
  tokens = []
  for word in "".join(cleaned).split():
    if lower_case:
      word = "".join(char for char in unicodedata.normalize("NFD", word.lower())
                     if unicodedata.category(char) != "Mn")
    tokens.extend(_split_on_punctuation(word))
  return " ".join(tokens).split()


_SPACE, _DROPPED, _CJK, _PUNCTUATION, _OTHER = range(5)


@functools.lru_cache(maxsize=None)
def _char_kind(char):
  """How BERT's basic tokenizer treats one character."""
  category = unicodedata.category(char)
  code = ord(char)
  if char in "\t\n\r" or category == "Zs":
    return _SPACE
  if code == 0xFFFD or category.startswith("C"):
    return _DROPPED
  if any(low <= code <= high for low, high in _CJK_RANGES):
    return _CJK
  # BERT counts all non-alphanumeric ASCII as punctuation, and Unicode P*.
  if (33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or
      123 <= code <= 126 or category.startswith("P")):
    return _PUNCTUATION
  return _OTHER


def _split_on_punctuation(word):
  pieces = []
  start_new_piece = True
  for char in word:
    if _char_kind(char) == _PUNCTUATION:
      pieces.append(char)
      start_new_piece = True
    else:
      if start_new_piece:
        pieces.append("")
      start_new_piece = False
      pieces[-1] += char
  return pieces


def write_prediction_files(predictions: SquadPredictions, output_dir: str
                           ) -> dict:
  """Writes the official predictions file and its companions, each atomically.

  Files: `predictions.json` ({qas_id: text}, what the official scripts read),
  `nbest_predictions.json`, and for v2.0 `null_odds.json` ({qas_id: null
  score}, the official v2.0 script's `--na-prob-file`).

  Returns:
    {"predictions", "nbest_predictions"[, "null_odds"]} -> the written paths.
  """
  output_dir = os.fspath(output_dir)
  paths = {"nbest_predictions": os.path.join(output_dir,
                                             "nbest_predictions.json")}
  files.write_json(paths["nbest_predictions"], predictions.nbest)
  if predictions.null_odds is not None:
    paths["null_odds"] = os.path.join(output_dir, "null_odds.json")
    files.write_json(paths["null_odds"], predictions.null_odds)
  paths["predictions"] = os.path.join(output_dir, "predictions.json")
  files.write_json(paths["predictions"], predictions.predictions)
  return paths
