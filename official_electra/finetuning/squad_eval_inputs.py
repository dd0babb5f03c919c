"""The inputs of the SQuAD evaluation (`squad_metrics`): the data, the
predictions and the null odds, read and checked, each problem one
`SquadEvalError` line naming the file (or value) and the fix.

Pure Python (no TensorFlow); a `gs://` path is read through
official_electra/files.py.
"""

import json
import math

from official_electra import errors

DATA_FIX = ("pass an official SQuAD 1.1 or 2.0 JSON file "
            "(data -> paragraphs -> qas)")
PREDICTIONS_FIX = ('write one JSON object {"<question id>": "<answer text>",'
                   ' ...} ("" for no answer), as predictions.json')
NULL_ODDS_FIX = ('pass one JSON object {"<question id>": <number>, ...}, as '
                 "the null-odds file the post-processing writes")


class SquadEvalError(errors.UserError):
  """A SQuAD data, predictions or null-odds file (or value) that cannot be
  scored; the message names it and the fix."""


def questions(data_json, data_name):
  """[(question id, gold answer texts, the qa dict)] in file order.

  Raises:
    SquadEvalError: not the SQuAD layout.
  """
  if not isinstance(data_json, dict) or not isinstance(
      data_json.get("data"), list):
    raise SquadEvalError(
        f"{data_name} is not SQuAD JSON (no \"data\" list of articles at the "
        f"top level); {DATA_FIX}")
  questions = []
  for article_index, article in enumerate(data_json["data"]):
    where = f"data[{article_index}]"
    for paragraph_index, paragraph in enumerate(
        _list_field(article, "paragraphs", where, data_name)):
      where = f"data[{article_index}].paragraphs[{paragraph_index}]"
      for qa_index, qa in enumerate(
          _list_field(paragraph, "qas", where, data_name)):
        where_qa = f"{where}.qas[{qa_index}]"
        if not isinstance(qa, dict) or not isinstance(qa.get("id"), str):
          raise SquadEvalError(
              f"{data_name}: {where_qa} has no string \"id\"; {DATA_FIX}")
        answers = _list_field(qa, "answers", where_qa, data_name)
        if not all(isinstance(answer, dict)
                   and isinstance(answer.get("text"), str)
                   for answer in answers):
          raise SquadEvalError(
              f"{data_name}: an answer of {where_qa} has no string \"text\"; "
              f"{DATA_FIX}")
        questions.append((qa["id"], [answer["text"] for answer in answers],
                          qa))
  return questions


def _list_field(parent, key, where, data_name):
  value = parent.get(key) if isinstance(parent, dict) else None
  if not isinstance(value, list):
    raise SquadEvalError(
        f"{data_name}: {where} has no {key!r} list; {DATA_FIX}")
  return value


def check_predictions(predictions, predictions_name):
  """`predictions` when it is an object of answer strings."""
  return _check_object(
      predictions, predictions_name, "answers",
      lambda question_id, answer: None if isinstance(answer, str) else (
          f"the answer to {question_id!r} is a JSON {_json_type(answer)}, "
          "not a string"), PREDICTIONS_FIX)


def check_null_odds(na_probs, null_odds_name):
  """`na_probs` when it is an object of finite numbers."""
  def problem(question_id, value):
    if (isinstance(value, bool) or not isinstance(value, (int, float))
        or not math.isfinite(value)):
      kind = ("a non-finite number" if isinstance(value, float)
              else f"a JSON {_json_type(value)}")
      return (f"the null odds of {question_id!r} is {kind}, not a finite "
              "number")
    return None
  return _check_object(na_probs, null_odds_name, "null odds", problem,
                       NULL_ODDS_FIX)


def _check_object(value, name, of_what, problem, fix):
  """`value` when it is a JSON object none of whose items `problem(key,
  item)` describes; otherwise one `SquadEvalError` naming the first."""
  if not isinstance(value, dict):
    raise SquadEvalError(f"{name} is a JSON {_json_type(value)}, not an "
                         f"object of {of_what}; {fix}")
  for key, item in value.items():
    described = problem(key, item)
    if described:
      raise SquadEvalError(f"{name}: {described}; {fix}")
  return value


def _json_type(value):
  if isinstance(value, bool):
    return "boolean"
  if value is None:
    return "null"
  if isinstance(value, (int, float)):
    return "number"
  return {dict: "object", list: "array", str: "string"}.get(
      type(value), type(value).__name__)


def read_json(path, fix):
  """The JSON value in `path`, or one `SquadEvalError` line with `fix`."""
  try:
    if "://" in path:
      # Only a URL needs TensorFlow's filesystems (gs://, ...); local files
      # are read without importing TensorFlow, so the program starts at once.
      from official_electra import files  # pylint: disable=g-import-not-at-top
      text = files.read_text(path)
    else:
      with open(path, encoding="utf-8") as json_file:
        text = json_file.read()
  except OSError as error:
    raise SquadEvalError(
        f"{path}: cannot read it ({error.strerror or error}); {fix}") from None
  except UnicodeDecodeError:
    raise SquadEvalError(f"{path}: not UTF-8 text; {fix}") from None
  try:
    return json.loads(text)
  except json.JSONDecodeError as error:
    raise SquadEvalError(
        f"{path}: not valid JSON ({error.msg} at line {error.lineno} column "
        f"{error.colno}); {fix}") from None
