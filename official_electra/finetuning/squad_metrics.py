"""SQuAD 1.1 and 2.0 scores, equal to the official evaluation scripts.

Written from the rules of the official scripts (`evaluate-v1.1.py`,
`evaluate-v2.0.py`; the authors' copies are
`finetune/qa/squad_official_eval*.py`), the same numbers to the last bit (the
same arithmetic in the same order):

- An answer is normalised: lower case, ASCII punctuation (`string.punctuation`)
  removed, the whole words a/an/the removed, whitespace collapsed. Exact match
  compares normalised texts; F1 compares their tokens (split on whitespace) as
  multisets. A question scores the maximum over its gold answers.
- v1.1 (`evaluate_v1`): a question without a prediction scores 0 and counts
  in the total (the script prints "Unanswered question ... will receive score
  0."; we log one warning); ids not in the data are ignored. An F1 with no
  common token is 0, even when both texts normalise to nothing (whose exact
  match is 1: on dev-v1.1 an empty prediction matches the 3 gold answers ".").
- v2.0 (`evaluate_v2`): gold answers that normalise to "" are dropped and a
  question left without any (an unanswerable one) has the one gold answer "";
  an F1 where either side normalises to "" is 1 when both do, else 0. A
  question whose null odds exceed `na_prob_thresh` is scored as if its
  prediction were "". With null odds, the script's `find_best_thresh` sweep
  (an oracle on the evaluated set itself) adds `best_exact`/`best_f1` and
  their thresholds. Ids not in the data are ignored. A question without a
  prediction (or, with null odds, without its null odds) makes the official
  script stop with a KeyError after printing "Missing prediction for ...": no
  scores come out, so here it is a `SquadEvalError`.

Pure Python (no TensorFlow), so `python -m official_electra.squad_eval` starts
at once; the files are read and checked by `squad_eval_inputs` (a `gs://`
path through official_electra/files.py).
"""

import collections
import dataclasses
import math
import re
import string
from typing import Optional

from absl import logging

from official_electra.finetuning import squad_eval_inputs

V1 = "1.1"
V2 = "2.0"

# The two scores of a question, in `question_scores`' order.
_SCORE_NAMES = ("exact", "f1")
_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
SquadEvalError = squad_eval_inputs.SquadEvalError


def normalize_answer(text: str) -> str:
  """Lower case, no ASCII punctuation, no a/an/the words, single spaces."""
  lowered = text.lower()
  without_punctuation = "".join(
      character for character in lowered if character not in _PUNCTUATION)
  without_articles = _ARTICLES.sub(" ", without_punctuation)
  return " ".join(without_articles.split())


def exact_match(prediction: str, gold: str) -> int:
  """1 when the normalised texts are equal, else 0 (both versions)."""
  return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str, version: str = V1) -> float:
  """Token-level F1 of the normalised texts, in [0, 1].

  Args:
    prediction: the predicted answer text.
    gold: one gold answer text.
    version: "1.1" (no common token scores 0, even two empty texts) or "2.0"
      (when either text normalises to "", 1 if both do, else 0).
  """
  prediction_tokens = normalize_answer(prediction).split()
  gold_tokens = normalize_answer(gold).split()
  if version == V2 and (not prediction_tokens or not gold_tokens):
    return float(prediction_tokens == gold_tokens)
  common = collections.Counter(prediction_tokens) & collections.Counter(
      gold_tokens)
  num_same = sum(common.values())
  if num_same == 0:
    return 0.0
  precision = 1.0 * num_same / len(prediction_tokens)
  recall = 1.0 * num_same / len(gold_tokens)
  return (2 * precision * recall) / (precision + recall)


def question_scores(prediction: str, gold_answers, version: str):
  """(exact match, F1) of one prediction: the maximum over the gold answers.

  Args:
    prediction: the predicted answer text.
    gold_answers: every gold answer text of the question (v2.0: may be empty).
    version: "1.1" or "2.0" (v2.0 drops gold answers that normalise to "" and
      uses [""] when none is left).

  Raises:
    SquadEvalError: a v1.1 question without gold answers.
  """
  if version == V2:
    gold_answers = [gold for gold in gold_answers if normalize_answer(gold)]
    gold_answers = gold_answers or [""]
  elif not gold_answers:
    raise SquadEvalError(
        "a SQuAD 1.1 question has no gold answer; give every question one, "
        "or mark unanswerable ones is_impossible (SQuAD 2.0)")
  return (max(exact_match(prediction, gold) for gold in gold_answers),
          max(f1_score(prediction, gold, version) for gold in gold_answers))


def detect_version(data_json, data_name: str = "the SQuAD data") -> str:
  """"2.0" when the data's "version" says 2 (as "v2.0") or any question has
  an `is_impossible` field, else "1.1".

  Args:
    data_json: the whole data file's JSON value.
    data_name: what an error calls the data (its file).

  Raises:
    SquadEvalError: `data_json` is not SQuAD JSON.
  """
  questions = squad_eval_inputs.questions(data_json, data_name)
  declared = str(data_json.get("version", "")).lstrip("vV")
  if declared.startswith("2") or any(
      "is_impossible" in qa for _, _, qa in questions):
    return V2
  return V1


def evaluate_v1(dataset, predictions) -> dict:
  """The official SQuAD 1.1 script's scores.

  Args:
    dataset: the data file's "data" list (articles -> paragraphs -> qas).
    predictions: question id -> answer text.

  Returns:
    {"exact_match", "f1"}, in percent over every question of `dataset`.

  Raises:
    SquadEvalError: malformed data or predictions, or a question without
      gold answers.
  """
  return _evaluate_v1({"data": dataset}, predictions, _Names())


def evaluate_v2(dataset, predictions, na_probs=None,
                na_prob_thresh: float = 1.0) -> dict:
  """The official SQuAD 2.0 script's scores.

  Args:
    dataset: the data file's "data" list (articles -> paragraphs -> qas; an
      unanswerable question has no answers).
    predictions: question id -> answer text ("" for no answer), for every
      question.
    na_probs: question id -> null odds (any number: the script calls it a
      probability, ELECTRA writes a logit). None: 0 for every prediction, as
      the script without `--na-prob-file`, and no threshold sweep.
    na_prob_thresh: a question whose null odds exceed this is scored as if
      its prediction were "".

  Returns:
    `exact`, `f1` (percent), `total`; `HasAns_*` and `NoAns_*` (the same
    three) when the data has such questions; with `na_probs`, `best_exact`,
    `best_exact_thresh`, `best_f1`, `best_f1_thresh` from the official
    sweep. In the official script's order.

  Raises:
    SquadEvalError: malformed data, predictions or null odds, a question
      without a prediction or without null odds (the official script stops
      with a KeyError).
  """
  return _evaluate_v2({"data": dataset}, predictions, na_probs,
                      na_prob_thresh, _Names())


def evaluate_file(data_file: str, predictions_file: str,
                  na_prob_file: Optional[str] = None,
                  na_prob_thresh: float = 1.0) -> dict:
  """Scores a predictions file as the official script of the data's version.

  Args:
    data_file: a SQuAD 1.1 or 2.0 JSON file (the version is detected).
    predictions_file: a JSON object, question id -> answer text.
    na_prob_file: SQuAD 2.0 only: a JSON object, question id -> null odds.
    na_prob_thresh: SQuAD 2.0 only (see `evaluate_v2`).

  Returns:
    The official script's dictionary (see `evaluate_v1`, `evaluate_v2`).

  Raises:
    SquadEvalError: a file that cannot be read or scored, in one line naming
      it and the fix.
  """
  names = _Names(data_file, predictions_file, na_prob_file or "null odds")
  data_json = squad_eval_inputs.read_json(data_file,
                                          squad_eval_inputs.DATA_FIX)
  version = detect_version(data_json, data_file)
  predictions = squad_eval_inputs.check_predictions(
      squad_eval_inputs.read_json(predictions_file,
                                  squad_eval_inputs.PREDICTIONS_FIX),
      predictions_file)
  if version == V1:
    if na_prob_file:
      raise SquadEvalError(
          f"{data_file} is SQuAD 1.1, which has no unanswerable questions; "
          f"drop the null-odds file {na_prob_file} (it is for SQuAD 2.0)")
    return _evaluate_v1(data_json, predictions, names)
  na_probs = None
  if na_prob_file:
    na_probs = squad_eval_inputs.read_json(na_prob_file,
                                           squad_eval_inputs.NULL_ODDS_FIX)
  return _evaluate_v2(data_json, predictions, na_probs, na_prob_thresh,
                      names)


@dataclasses.dataclass(frozen=True)
class _Names:
  """What the error messages call the data, predictions and null odds."""
  data: str = "the SQuAD data"
  predictions: str = "the predictions"
  null_odds: str = "the null odds"


def _evaluate_v1(data_json, predictions, names):
  predictions = squad_eval_inputs.check_predictions(predictions,
                                                    names.predictions)
  exact_total = f1_total = 0
  total = 0
  missing = []
  for question_id, gold_answers, _ in squad_eval_inputs.questions(
      data_json, names.data):
    total += 1
    if question_id not in predictions:
      missing.append(question_id)
      continue
    if not gold_answers:
      raise SquadEvalError(
          f"{names.data}: question {question_id!r} has no gold answer, which "
          "SQuAD 1.1 requires; give it one, or mark unanswerable questions "
          "is_impossible (SQuAD 2.0)")
    exact, f1 = question_scores(predictions[question_id], gold_answers, V1)
    exact_total += exact
    f1_total += f1
  if not total:
    raise SquadEvalError(
        f"{names.data} has no questions; {squad_eval_inputs.DATA_FIX}")
  if missing:
    logging.warning(
        "%s has no answer for %d of the %d questions (first: %r); each "
        "scores 0, as in the official SQuAD 1.1 script", names.predictions,
        len(missing), total, missing[0])
  return {"exact_match": 100.0 * exact_total / total,
          "f1": 100.0 * f1_total / total}


def _evaluate_v2(data_json, predictions, na_probs, na_prob_thresh, names):
  predictions = squad_eval_inputs.check_predictions(predictions,
                                                    names.predictions)
  if math.isnan(na_prob_thresh):
    raise SquadEvalError("na_prob_thresh is NaN; pass a number")
  has_answer = {}
  raw_scores = {name: {} for name in _SCORE_NAMES}
  missing = []
  for question_id, gold_answers, _ in squad_eval_inputs.questions(
      data_json, names.data):
    has_answer[question_id] = bool(gold_answers)
    if question_id not in predictions:
      missing.append(question_id)
      continue
    for name, score in zip(_SCORE_NAMES, question_scores(
        predictions[question_id], gold_answers, V2)):
      raw_scores[name][question_id] = score
  if not has_answer:
    raise SquadEvalError(
        f"{names.data} has no questions; {squad_eval_inputs.DATA_FIX}")
  if missing:
    raise SquadEvalError(
        f"{names.predictions} has no answer for {len(missing)} of the "
        f"{len(has_answer)} questions (first: {missing[0]!r}), which the "
        "official SQuAD 2.0 script cannot score (it stops with a KeyError); "
        'write an answer for every question ("" for no answer)')
  if na_probs is None:
    odds = {question_id: 0.0 for question_id in predictions}
  else:
    odds = squad_eval_inputs.check_null_odds(na_probs, names.null_odds)
    without_odds = [question_id for question_id in has_answer
                    if question_id not in odds]
    if without_odds:
      raise SquadEvalError(
          f"{names.null_odds} has no value for {len(without_odds)} of the "
          f"{len(has_answer)} questions (first: {without_odds[0]!r}), which "
          "the official SQuAD 2.0 script cannot score (it stops with a "
          "KeyError); write the null odds of every question")
  scores = {name: _apply_null_threshold(raw_scores[name], odds, has_answer,
                                        na_prob_thresh)
            for name in _SCORE_NAMES}
  results = _percentages(scores, list(has_answer))
  for prefix, wanted in (("HasAns", True), ("NoAns", False)):
    question_ids = [question_id for question_id, answerable
                    in has_answer.items() if answerable == wanted]
    if question_ids:
      for key, value in _percentages(scores, question_ids).items():
        results[f"{prefix}_{key}"] = value
  if na_probs is not None:
    for name in _SCORE_NAMES:
      best, threshold = _best_threshold(predictions, raw_scores[name], odds,
                                        has_answer)
      results[f"best_{name}"] = best
      results[f"best_{name}_thresh"] = threshold
  return results


def _apply_null_threshold(raw_scores, odds, has_answer, na_prob_thresh):
  """Scores with "" predicted where the null odds exceed the threshold."""
  return {question_id: (float(not has_answer[question_id])
                        if odds[question_id] > na_prob_thresh else score)
          for question_id, score in raw_scores.items()}


def _percentages(scores, question_ids):
  """`exact`, `f1` (percent) and `total` over `question_ids`."""
  total = len(question_ids)
  results = {name: 100.0 * sum(scores[name][key] for key in question_ids)
             / total for name in _SCORE_NAMES}
  results["total"] = total
  return results


def _best_threshold(predictions, raw_scores, odds, has_answer):
  """The official `find_best_thresh`: (best score in percent, threshold).

  Starts from "every question null" (each unanswerable one right), then
  answers the questions in increasing null odds: an answerable one adds its
  raw score, an unanswerable one with a non-empty prediction (the raw text,
  not normalised) subtracts 1. The threshold is the null odds of the question
  where the running score last rose; 0.0 when it never rises. Ties keep the
  order of `odds`, as the script's stable sort.
  """
  score = best_score = sum(1 for answerable in has_answer.values()
                           if not answerable)
  best_threshold = 0.0
  for question_id in sorted(odds, key=odds.__getitem__):
    if question_id not in raw_scores:
      continue
    if has_answer[question_id]:
      score += raw_scores[question_id]
    elif predictions[question_id]:
      score -= 1
    if score > best_score:
      best_score = score
      best_threshold = odds[question_id]
  return 100.0 * best_score / len(raw_scores), best_threshold
