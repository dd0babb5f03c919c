"""The SQuAD scores follow the official v1.1 and v2.0 evaluation scripts.

Hand-made cases pin each rule (their expected numbers are worked out in the
comments); property tests check F1's symmetry and agreement with exact match;
Hugging Face transformers' copy of the official v2.0 functions
(`transformers.data.metrics.squad_metrics`) is a test-only reference on
random cases and on the dev file.
"""

import importlib.util
import json
import logging
import os
import random
import subprocess
import sys

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from official_electra import command_line
from official_electra.finetuning import squad_metrics
from tests.conftest import missing_shared_data
from tests.conftest import REPO_ROOT

V1 = squad_metrics.V1
V2 = squad_metrics.V2
_V2_KEYS = ["exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total",
            "NoAns_exact", "NoAns_f1", "NoAns_total"]
_BEST_KEYS = ["best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"]
_DEV_FILE = REPO_ROOT.parent / "shared" / "data" / "squad" / "dev-v1.1.json"


def _data(questions, version=V1):
  """A SQuAD JSON value: `questions` is [(id, [gold texts])], one paragraph.

  For 2.0 every question gets `is_impossible` (true when it has no answer).
  """
  qas = []
  for question_id, answers in questions:
    qa = {"id": question_id, "question": "what?",
          "answers": [{"text": text, "answer_start": 0} for text in answers]}
    if version == V2:
      qa["is_impossible"] = not answers
    qas.append(qa)
  return {"version": "1.1" if version == V1 else "v2.0",
          "data": [{"title": "t", "paragraphs": [
              {"context": "some context", "qas": qas}]}]}


def _write(path, value):
  path.write_text(value if isinstance(value, str) else json.dumps(value))
  return str(path)


# v1.1: q1 exact (punctuation and case), q2 F1 from the better of two golds
# ("Denver" vs "Denver Broncos": P 1, R 1/2, F1 2/3; vs "Broncos team of
# Denver": R 1/4, F1 0.4), q3 ("in 1990 season" vs "1990": P 1/3, R 1, F1 0.5).
_V1_QUESTIONS = [("q1", ["Denver Broncos", "The Denver Broncos"]),
                 ("q2", ["Denver Broncos", "Broncos team of Denver"]),
                 ("q3", ["1990"])]
_V1_PREDICTIONS = {"q1": "denver broncos!", "q2": "Denver",
                   "q3": "in 1990 season"}

# v2.0: a1 right (1, 1), a2 partly (exact 0, F1 0.4), n3 right to answer ""
# (1, 1), n4 wrong to answer (0, 0).
_V2_QUESTIONS = [("a1", ["Denver Broncos"]), ("a2", ["Broncos team of Denver"]),
                 ("n3", []), ("n4", [])]
_V2_PREDICTIONS = {"a1": "Denver Broncos", "a2": "Denver", "n3": "",
                   "n4": "Carolina"}
_V2_NULL_ODDS = {"a1": 0.1, "a2": 0.6, "n3": 0.9, "n4": 0.7}


@pytest.mark.parametrize("text, normalized", [
    ("The Quick  Brown\tFox\n", "quick brown fox"),      # case, whitespace
    ("Hello, World!", "hello world"),                    # punctuation
    ("U.S.A.", "usa"),
    ("a.m.", "am"),
    ("an apple and a pear", "apple and pear"),           # articles
    ("Anthem at the Theater", "anthem at theater"),      # whole words only
    ("the-end", "theend"),          # punctuation goes before the articles
    ("(The) end", "end"),
    ("\u201cThe\u201d end", "\u201c \u201d end"),    # only ASCII punctuation
    ("The", ""),
    ("  \n ", ""),
    ("\u00dcnited THE", "\u00fcnited"),
])
def test_normalisation(text, normalized):
  assert squad_metrics.normalize_answer(text) == normalized


@pytest.mark.parametrize("version", [V1, V2])
@pytest.mark.parametrize("prediction, gold, f1", [
    ("the cat sat", "a cat sat down", 0.8),   # P 2/2, R 2/3: 2PR/(P+R) = 0.8
    ("cat cat cat", "cat dog cat", 2 / 3),    # common = min counts = 2 cats
    ("in 1990 season", "1990", 0.5),          # P 1/3, R 1
    ("Denver", "Broncos", 0.0),
    ("The Broncos!", "broncos", 1.0),
])
def test_token_f1_by_hand(version, prediction, gold, f1):
  assert squad_metrics.f1_score(prediction, gold, version) == pytest.approx(
      f1, rel=1e-12)


def test_empty_answers_score_differently_in_the_two_versions():
  # Both normalise to "": exact 1; v1.1's F1 has no common token (0), v2.0
  # scores an empty pair 1 and an empty against a non-empty text 0.
  assert squad_metrics.exact_match("", "The") == 1
  assert squad_metrics.f1_score("", "The", V1) == 0.0
  assert squad_metrics.f1_score("", "The", V2) == 1.0
  assert squad_metrics.f1_score("", "cat", V2) == 0.0
  assert squad_metrics.f1_score("cat", "", V2) == 0.0


def test_the_maximum_over_several_gold_answers():
  golds = ["Denver Broncos", "Broncos team of Denver"]
  for ordered in (golds, golds[::-1]):
    exact, f1 = squad_metrics.question_scores("Denver", ordered, V1)
    assert exact == 0 and f1 == pytest.approx(2 / 3, rel=1e-12)
  exact, f1 = squad_metrics.question_scores(
      "the broncos team of Denver.", golds, V1)
  assert (exact, f1) == (1, 1.0)


def test_v2_drops_gold_answers_that_normalise_to_nothing():
  # v2.0 keeps only "cat"; v1.1 also matches the "" of "The".
  assert squad_metrics.question_scores("", ["The", "cat"], V2) == (0, 0.0)
  assert squad_metrics.question_scores("", ["The", "cat"], V1) == (1, 0.0)
  # Only empty golds: the one gold answer is "".
  assert squad_metrics.question_scores("a", ["The"], V2) == (1, 1.0)


def test_v1_scores():
  results = squad_metrics.evaluate_v1(_data(_V1_QUESTIONS)["data"],
                                      _V1_PREDICTIONS)
  assert list(results) == ["exact_match", "f1"]
  assert results["exact_match"] == pytest.approx(100 / 3, rel=1e-12)
  # 100 * (1 + 2/3 + 1/2) / 3
  assert results["f1"] == pytest.approx(1300 / 18, rel=1e-12)


def test_v1_missing_ids_score_zero_in_the_total_and_extra_ids_are_ignored(
    caplog):
  predictions = {"q1": "denver broncos!", "q2": "Denver",
                 "not_a_question": "Denver Broncos"}
  with caplog.at_level(logging.WARNING, logger="absl"):
    results = squad_metrics.evaluate_v1(_data(_V1_QUESTIONS)["data"],
                                        predictions)
  assert results["exact_match"] == pytest.approx(100 / 3, rel=1e-12)
  assert results["f1"] == pytest.approx(100 * (5 / 3) / 3, rel=1e-12)
  warnings = [record.getMessage() for record in caplog.records]
  assert any("1 of the 3 questions" in message and "'q3'" in message
             for message in warnings), warnings
  assert squad_metrics.evaluate_v1(_data(_V1_QUESTIONS)["data"], {}) == {
      "exact_match": 0.0, "f1": 0.0}


def test_v1_question_without_gold_answer_is_an_error():
  with pytest.raises(squad_metrics.SquadEvalError, match="'q0' has no gold"):
    squad_metrics.evaluate_v1(_data([("q0", [])])["data"], {"q0": ""})


def test_v2_scores_and_breakdowns():
  results = squad_metrics.evaluate_v2(_data(_V2_QUESTIONS, V2)["data"],
                                      _V2_PREDICTIONS)
  assert list(results) == _V2_KEYS
  assert results == pytest.approx({
      "exact": 50.0, "f1": 60.0, "total": 4,        # (1 + 0.4 + 1 + 0) / 4
      "HasAns_exact": 50.0, "HasAns_f1": 70.0, "HasAns_total": 2,
      "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2}, rel=1e-12)


def test_v2_breakdowns_appear_only_with_their_questions():
  answerable = squad_metrics.evaluate_v2(
      _data(_V2_QUESTIONS[:2], V2)["data"], _V2_PREDICTIONS)
  assert list(answerable) == _V2_KEYS[:6]
  unanswerable = squad_metrics.evaluate_v2(
      _data(_V2_QUESTIONS[2:], V2)["data"], _V2_PREDICTIONS)
  assert list(unanswerable) == _V2_KEYS[:3] + _V2_KEYS[6:]
  assert unanswerable["NoAns_exact"] == 50.0


def test_v2_null_odds_above_the_threshold_score_as_an_empty_answer():
  # thresh 0.6: n3 (0.9) and n4 (0.7) become "" (1 each); a2 at exactly 0.6
  # is not above it and keeps F1 0.4. Exact (1+0+1+1)/4, F1 (1+.4+1+1)/4.
  results = squad_metrics.evaluate_v2(
      _data(_V2_QUESTIONS, V2)["data"], _V2_PREDICTIONS, _V2_NULL_ODDS,
      na_prob_thresh=0.6)
  assert list(results) == _V2_KEYS + _BEST_KEYS
  assert results["exact"] == pytest.approx(75.0, rel=1e-12)
  assert results["f1"] == pytest.approx(85.0, rel=1e-12)
  assert results["HasAns_f1"] == pytest.approx(70.0, rel=1e-12)
  assert results["NoAns_exact"] == results["NoAns_f1"] == 100.0
  # thresh 0.5: a2 too becomes "", which is wrong for it.
  results = squad_metrics.evaluate_v2(
      _data(_V2_QUESTIONS, V2)["data"], _V2_PREDICTIONS, _V2_NULL_ODDS,
      na_prob_thresh=0.5)
  assert results["f1"] == results["exact"] == 75.0
  assert results["HasAns_f1"] == 50.0


def test_v2_without_null_odds_every_question_has_odds_zero():
  # As the official script without --na-prob-file: odds 0 for every
  # prediction, so a threshold below 0 makes every answer "".
  results = squad_metrics.evaluate_v2(_data(_V2_QUESTIONS, V2)["data"],
                                      _V2_PREDICTIONS, na_prob_thresh=-1.0)
  assert list(results) == _V2_KEYS
  assert (results["HasAns_exact"], results["HasAns_f1"]) == (0.0, 0.0)
  assert (results["NoAns_exact"], results["NoAns_f1"]) == (100.0, 100.0)


def test_v2_best_threshold_search_by_hand():
  # The sweep starts with every answer "" (the 2 unanswerable right: 2), then
  # answers in increasing odds, each on its raw score:
  #   a1 (0.1): +1 -> 3 (exact and F1 best, thresh 0.1)
  #   a2 (0.6): exact +0 -> 3; F1 +0.4 -> 3.4 (F1 best, thresh 0.6)
  #   n4 (0.7): "Carolina" is not empty: -1;  n3 (0.9): "" -> +0.
  # best_exact 100 * 3 / 4, best_f1 100 * 3.4 / 4.
  results = squad_metrics.evaluate_v2(
      _data(_V2_QUESTIONS, V2)["data"], _V2_PREDICTIONS, _V2_NULL_ODDS)
  assert results["best_exact"] == pytest.approx(75.0, rel=1e-12)
  assert results["best_exact_thresh"] == 0.1
  assert results["best_f1"] == pytest.approx(85.0, rel=1e-12)
  assert results["best_f1_thresh"] == 0.6
  # The default threshold (1.0) answers everything: exact 50, F1 60.
  assert results["exact"] == 50.0
  assert results["f1"] == pytest.approx(60.0, rel=1e-12)


def test_v2_best_threshold_quirks_of_the_official_sweep():
  data = _data([("a", ["cat"]), ("n", [])], V2)["data"]
  # The running score never rises above "all empty": the threshold stays 0.0
  # (not the lowest odds).
  results = squad_metrics.evaluate_v2(data, {"a": "dog", "n": "dog"},
                                      {"a": 5.0, "n": 7.0})
  assert (results["best_exact"], results["best_exact_thresh"]) == (50.0, 0.0)
  assert (results["best_f1"], results["best_f1_thresh"]) == (50.0, 0.0)
  # An unanswerable question's answer counts -1 when its raw text is not
  # empty, even if it normalises to "" (its exact score is 1).
  results = squad_metrics.evaluate_v2(data, {"a": "cat", "n": "The"},
                                      {"a": 0.5, "n": 0.2})
  assert results["exact"] == 100.0
  assert (results["best_exact"], results["best_exact_thresh"]) == (50.0, 0.0)
  # Tied odds are swept one question at a time in the null-odds order.
  predictions = {"a": "cat", "n": "dog"}
  assert squad_metrics.evaluate_v2(data, predictions, {"a": 1.0, "n": 1.0})[
      "best_exact"] == 100.0
  assert squad_metrics.evaluate_v2(data, predictions, {"n": 1.0, "a": 1.0})[
      "best_exact"] == 50.0


def test_v2_extra_ids_are_ignored():
  data = _data(_V2_QUESTIONS, V2)["data"]
  expected = squad_metrics.evaluate_v2(data, _V2_PREDICTIONS, _V2_NULL_ODDS)
  assert squad_metrics.evaluate_v2(
      data, {**_V2_PREDICTIONS, "extra": "x"},
      {"extra": -10.0, **_V2_NULL_ODDS}) == expected


def test_v2_missing_prediction_or_null_odds_is_an_error():
  # The official v2.0 script prints "Missing prediction for n4" and then
  # stops with a KeyError: it gives no scores.
  data = _data(_V2_QUESTIONS, V2)["data"]
  predictions = dict(_V2_PREDICTIONS)
  del predictions["n4"]
  with pytest.raises(squad_metrics.SquadEvalError,
                     match=r"no answer for 1 of the 4 questions .*'n4'"):
    squad_metrics.evaluate_v2(data, predictions)
  null_odds = dict(_V2_NULL_ODDS)
  del null_odds["a2"]
  with pytest.raises(squad_metrics.SquadEvalError,
                     match=r"no value for 1 of the 4 questions .*'a2'"):
    squad_metrics.evaluate_v2(data, _V2_PREDICTIONS, null_odds)


@pytest.mark.parametrize("data_json, version", [
    (_data(_V1_QUESTIONS), V1),
    (_data(_V2_QUESTIONS, V2), V2),
    ({"version": "v2.0", "data": _data(_V1_QUESTIONS)["data"]}, V2),
    ({"data": _data(_V2_QUESTIONS, V2)["data"]}, V2),
    ({"data": _data(_V1_QUESTIONS)["data"]}, V1),
])
def test_detect_version(data_json, version):
  assert squad_metrics.detect_version(data_json) == version


def test_evaluate_file_detects_the_version(tmp_path):
  v1 = squad_metrics.evaluate_file(
      _write(tmp_path / "v1.json", _data(_V1_QUESTIONS)),
      _write(tmp_path / "p1.json", _V1_PREDICTIONS))
  assert list(v1) == ["exact_match", "f1"]
  v2 = squad_metrics.evaluate_file(
      _write(tmp_path / "v2.json", _data(_V2_QUESTIONS, V2)),
      _write(tmp_path / "p2.json", _V2_PREDICTIONS),
      na_prob_file=_write(tmp_path / "odds.json", _V2_NULL_ODDS),
      na_prob_thresh=0.6)
  assert v2 == squad_metrics.evaluate_v2(
      _data(_V2_QUESTIONS, V2)["data"], _V2_PREDICTIONS, _V2_NULL_ODDS, 0.6)


# (which file is bad: data, predictions or odds; its content; the message)
_BAD_FILES = [
    ("data", "{\"data\": [", "not valid JSON"),
    ("data", {"version": "1.1"}, "not SQuAD JSON (no \"data\" list"),
    ("data", {"data": [{"title": "t"}]}, "data[0] has no 'paragraphs' list"),
    ("data", {"data": [{"paragraphs": [{"qas": [{"answers": []}]}]}]},
     "data[0].paragraphs[0].qas[0] has no string \"id\""),
    ("predictions", ["Denver"], "is a JSON array, not an object of answers"),
    ("predictions", {"a1": 3}, "the answer to 'a1' is a JSON number, not a "
     "string"),
    ("odds", [0.5], "is a JSON array, not an object of null odds"),
    ("odds", {"a1": "high"}, "the null odds of 'a1' is a JSON string"),
    ("odds", "{\"a1\": NaN}", "the null odds of 'a1' is a non-finite number"),
]


@pytest.mark.parametrize("bad, content, message", _BAD_FILES)
def test_bad_files_are_one_line_naming_the_file(tmp_path, bad, content,
                                                message):
  paths = {"data": _data(_V2_QUESTIONS, V2), "predictions": _V2_PREDICTIONS,
           "odds": _V2_NULL_ODDS}
  paths = {name: _write(tmp_path / f"{name}.json",
                        content if name == bad else value)
           for name, value in paths.items()}
  with pytest.raises(squad_metrics.SquadEvalError) as error:
    squad_metrics.evaluate_file(paths["data"], paths["predictions"],
                                paths["odds"])
  assert str(error.value).startswith(paths[bad]), str(error.value)
  assert message in str(error.value)
  assert "\n" not in str(error.value)


def test_missing_file_and_null_odds_for_v1_are_errors(tmp_path):
  data = _write(tmp_path / "v1.json", _data(_V1_QUESTIONS))
  predictions = _write(tmp_path / "p.json", _V1_PREDICTIONS)
  with pytest.raises(squad_metrics.SquadEvalError,
                     match="no_such.json: cannot read it"):
    squad_metrics.evaluate_file(data, str(tmp_path / "no_such.json"))
  with pytest.raises(squad_metrics.SquadEvalError,
                     match="is SQuAD 1.1.*drop the null-odds file"):
    squad_metrics.evaluate_file(data, predictions,
                                _write(tmp_path / "odds.json", {"q1": 0.0}))


_WORDS = ("the", "The", "a", "an", "cat", "Cat", "cats", "dog", "sat", "mat",
          "Denver", "1990", ".", ",", "'s", "U.S.", "an-the", "\u00e9t\u00e9",
          "")
_ANSWERS = st.one_of(
    st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join), st.text())


@settings(max_examples=300, deadline=None)
@given(_ANSWERS, _ANSWERS)
def test_f1_is_symmetric_and_exact_match_implies_full_f1(first, second):
  for version in (V1, V2):
    f1 = squad_metrics.f1_score(first, second, version)
    assert f1 == squad_metrics.f1_score(second, first, version)
    assert 0.0 <= f1 <= 1.0
  same_tokens = (sorted(squad_metrics.normalize_answer(first).split())
                 == sorted(squad_metrics.normalize_answer(second).split()))
  assert (squad_metrics.f1_score(first, second, V2) == 1.0) == same_tokens
  if squad_metrics.exact_match(first, second):
    assert squad_metrics.f1_score(first, second, V2) == 1.0
    if squad_metrics.normalize_answer(first):
      assert squad_metrics.f1_score(first, second, V1) == 1.0


# Runs transformers' copy of the official v2.0 functions on a JSON list of
# cases read from stdin, without TensorFlow or PyTorch (an import of seconds).
_REFERENCE_SCRIPT = """
import json, sys, types
from transformers.data.metrics import squad_metrics
results = []
for case in json.load(sys.stdin):
  examples = [types.SimpleNamespace(
      qas_id=question_id, answers=[{"text": text} for text in answers])
              for question_id, answers in case["questions"]]
  results.append(squad_metrics.squad_evaluate(
      examples, case["predictions"], case["null_odds"], case["threshold"]))
print(json.dumps(results))
"""


def _official_v2(cases):
  """The official v2.0 scores of each case (test-only reference)."""
  if importlib.util.find_spec("transformers") is None:
    pytest.skip("transformers (the test-only reference) is not installed")
  result = subprocess.run(
      [sys.executable, "-c", _REFERENCE_SCRIPT], input=json.dumps(cases),
      capture_output=True, text=True, check=False, timeout=300,
      env=dict(os.environ, USE_TF="0", USE_TORCH="0", USE_FLAX="0"))
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.splitlines()[-1])


def _case(questions, predictions, null_odds, threshold):
  return {"questions": questions, "predictions": predictions,
          "null_odds": null_odds, "threshold": threshold}


def _ours(case):
  return squad_metrics.evaluate_v2(
      _data(case["questions"], V2)["data"], case["predictions"],
      case["null_odds"], case["threshold"])


def _random_cases(count):
  rng = random.Random(0)

  def text(max_words):
    return " ".join(rng.choice(_WORDS)
                    for _ in range(rng.randint(0, max_words)))

  cases = []
  for _ in range(count):
    ids = [f"q{index}" for index in range(rng.randint(1, 8))]
    cases.append(_case(
        [(question_id, [text(4) for _ in range(rng.randint(0, 3))])
         for question_id in ids],
        {question_id: text(4) for question_id in ids},
        # Few values, so odds tie.
        {question_id: rng.choice([-3.0, -1.0, 0.0, 0.5, 2.0])
         for question_id in ids},
        rng.choice([-1.0, 0.0, 0.5, 1.0])))
  return cases


def _dev_case(data_json):
  """Every dev question with a partial answer: whole, first word dropped,
  two extra words, or empty; varied null odds."""
  questions = _dev_questions(data_json)
  predictions = {}
  null_odds = {}
  for index, qa in enumerate(questions):
    words = qa["answers"][index % len(qa["answers"])]["text"].split()
    predictions[qa["id"]] = " ".join(
        (words, words[1:], words + ["the", "year"], [])[index % 4])
    null_odds[qa["id"]] = (index * 7919) % 101 / 10 - 5
  return _case([(qa["id"], [answer["text"] for answer in qa["answers"]])
                for qa in questions], predictions, null_odds, 0.0)


@pytest.fixture(scope="module")
def official_v2():
  """(cases, the reference's results): 400 random cases, then the dev case
  when the dev file is present (one reference process for all)."""
  cases = _random_cases(400)
  if _DEV_FILE.is_file():
    cases.append(_dev_case(json.loads(_DEV_FILE.read_text(encoding="utf-8"))))
  return cases, _official_v2(cases)


def test_v2_equals_the_official_functions_on_random_cases(official_v2):
  cases, results = official_v2
  for case, official in zip(cases[:400], results[:400], strict=True):
    assert list(_ours(case).items()) == list(official.items()), case


def _run_cli(*arguments):
  return subprocess.run(
      [sys.executable, "-m", "official_electra.squad_eval", *arguments],
      capture_output=True, text=True, check=False, timeout=120, cwd=REPO_ROOT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


def test_cli_prints_one_json_object(tmp_path):
  data = _write(tmp_path / "v2.json", _data(_V2_QUESTIONS, V2))
  predictions = _write(tmp_path / "p.json", _V2_PREDICTIONS)
  odds = _write(tmp_path / "odds.json", _V2_NULL_ODDS)
  result = _run_cli(data, predictions, f"--na_prob_file={odds}",
                    "--na_prob_thresh=0.6")
  assert result.returncode == 0, result.stderr[-3000:]
  assert len(result.stdout.strip().splitlines()) == 1, result.stdout
  printed = json.loads(result.stdout)
  assert list(printed) == _V2_KEYS + _BEST_KEYS
  assert printed == squad_metrics.evaluate_file(data, predictions, odds, 0.6)
  # v1.1 with an unanswered question: the warning goes to stderr only.
  predictions = dict(_V1_PREDICTIONS)
  del predictions["q3"]
  result = _run_cli(_write(tmp_path / "v1.json", _data(_V1_QUESTIONS)),
                    _write(tmp_path / "p1.json", predictions))
  assert result.returncode == 0, result.stderr[-3000:]
  assert json.loads(result.stdout) == pytest.approx(
      {"exact_match": 100 / 3, "f1": 100 * (5 / 3) / 3}, rel=1e-12)
  assert "'q3'" in result.stderr


@pytest.mark.parametrize("bad, content, named", [
    ("predictions", ["Denver"], "is a JSON array"),
    ("data", "{\"data\": [", "not valid JSON"),
])
def test_cli_errors_are_one_line_and_exit_1(tmp_path, bad, content, named):
  files = {"data": _data(_V1_QUESTIONS), "predictions": _V1_PREDICTIONS}
  paths = {name: _write(tmp_path / f"{name}.json",
                        content if name == bad else value)
           for name, value in files.items()}
  result = _run_cli(paths["data"], paths["predictions"])
  assert result.returncode == command_line.USER_ERROR_EXIT_STATUS
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  errors = [line for line in result.stderr.splitlines()
            if line.startswith("error:")]
  assert len(errors) == 1, result.stderr[-3000:]
  assert paths[bad] in errors[0] and named in errors[0], errors[0]
  assert not result.stdout


@pytest.fixture(scope="module")
def squad_dev():
  path = _DEV_FILE
  if not path.is_file():
    missing_shared_data(f"{path} is absent (a user's clone has no ../shared); "
                        "these tests score the official SQuAD 1.1 dev file")
  return path, json.loads(path.read_text(encoding="utf-8"))


def _dev_questions(data_json):
  return [qa for article in data_json["data"]
          for paragraph in article["paragraphs"] for qa in paragraph["qas"]]


def test_dev_gold_answers_score_100_and_empty_answers_0(squad_dev, tmp_path):
  path, data_json = squad_dev
  questions = _dev_questions(data_json)
  assert squad_metrics.detect_version(data_json) == V1
  gold = {qa["id"]: qa["answers"][0]["text"] for qa in questions}
  assert squad_metrics.evaluate_file(
      str(path), _write(tmp_path / "gold.json", gold)) == {
          "exact_match": 100.0, "f1": 100.0}
  # Empty answers score 0, except exact match on the 3 questions with a gold
  # answer "." (normalised to "", as ""): the official v1.1 rules.
  empty = {qa["id"]: "" for qa in questions}
  assert sum(any(answer["text"] == "." for answer in qa["answers"])
             for qa in questions) == 3
  assert squad_metrics.evaluate_file(
      str(path), _write(tmp_path / "empty.json", empty)) == {
          "exact_match": 100.0 * 3 / len(questions), "f1": 0.0}
  as_v2 = squad_metrics.evaluate_v2(data_json["data"], gold)
  assert (as_v2["exact"], as_v2["f1"], as_v2["HasAns_total"]) == (
      100.0, 100.0, len(questions))


def test_dev_v2_scores_equal_the_official_functions(squad_dev, official_v2):
  cases, results = official_v2
  assert len(cases) == 401
  ours = _ours(cases[-1])
  assert list(ours.items()) == list(results[-1].items())
  assert 0 < ours["exact"] < ours["f1"] < 100
