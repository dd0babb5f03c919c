"""SQuAD 1.1 / 2.0: the JSON reader (the model's windows: `squad_windows.py`).

Follows the original's `finetune/qa/qa_tasks.py` (ELECTRA_REFERENCE_SQUAD.md
section 1): contexts split into whitespace words, one example per question, the
training answer mapped to words (`squad_windows.py` maps it on to WordPiece
tokens, with the improved span, and cuts each context into `[CLS] question
[SEP] window [SEP]` windows with a doc stride).

Reading (`read_squad_file`) checks the file's layout and raises one-line
`SquadDataError`s for what the original would crash on or silently learn from
(a corrupt `answer_start`, an empty question, duplicate ids). Training
questions the original skips (answer past the context, answer not in the
words) are skipped, counted and logged as there.

Article selection: `articles=` (indices into the file's `data` list, e.g.
`range(40)`, or `parse_article_indices("40-47")`) keeps those articles in file
order, so experiments can split dev-v1.1.json by article.

A file is read and parsed once (`load_squad_file`); `read_squad_json` reads
its questions, `squad_windows.featurize` cuts them into windows, and
`squad_cache.load_or_build_features` caches those.
"""

import dataclasses
import hashlib
import json
import os
import re
from typing import Any, Iterable, Optional

from absl import logging
import numpy as np

from official_electra import errors
from official_electra import files

VERSIONS = ("1.1", "2.0")
# The original's `is_whitespace`: space, tab, CR, LF and U+202F.
_WORD = re.compile("[^ \t\r\n\u202f]+")


class SquadDataError(errors.UserError):
  """A SQuAD file, or a length setting, that cannot give the model's windows."""


@dataclasses.dataclass(frozen=True)
class SquadExample:
  """One question of a SQuAD file.

  Attributes:
    qas_id: the question's `id`, the key of the predictions file.
    question_text: the question as in the JSON.
    context_text: the paragraph as in the JSON.
    doc_words: the context split on whitespace (space, tab, CR, LF, U+202F).
    word_char_offsets: `(start, end_exclusive)` character offsets of each word
      in `context_text`.
    answers: every gold answer text (may be empty: v2.0 impossible questions).
    answer_text: the training answer (`answers[0]`); "" when impossible or
      read without labels (`is_training=False`).
    start_word: index of the training answer's first word, -1 without one.
    end_word: index of its last word, -1 without one.
    is_impossible: v2.0's `is_impossible` (always False for v1.1).
  """
  qas_id: str
  question_text: str
  context_text: str
  doc_words: tuple
  word_char_offsets: tuple
  answers: tuple
  answer_text: str
  start_word: int
  end_word: int
  is_impossible: bool


def whitespace_words(text: str) -> tuple[list, list, list]:
  """The original's whitespace words of a context.

  Returns:
    `(words, char_offsets, char_to_word_offset)`: the words; each word's
    `(start, end_exclusive)` characters; for every character the index of the
    word holding it (a whitespace character maps to the word before it, -1
    before the first word).
  """
  matches = list(_WORD.finditer(text))
  words = [match.group() for match in matches]
  offsets = [match.span() for match in matches]
  starts = np.array([start for start, _ in offsets], np.int64)
  char_to_word = np.searchsorted(starts, np.arange(len(text)), side="right") - 1
  return words, offsets, char_to_word.tolist()


def parse_article_indices(spec: str) -> tuple[int, ...]:
  """Article indices from text such as "0-39", "40-47" or "0-9,20,30-31"."""
  indices = []
  for part in spec.split(","):
    bounds = part.strip().split("-")
    if len(bounds) not in (1, 2) or not all(bound.strip().isdigit()
                                            for bound in bounds):
      raise SquadDataError(
          f"article selection {spec!r} is not a list of indices or ranges: "
          "write e.g. 0-39 or 40-47 or 0-9,20")
    first, last = int(bounds[0]), int(bounds[-1])
    indices.extend(range(first, last + 1))
  return tuple(indices)


@dataclasses.dataclass(frozen=True)
class SquadFile:
  """A SQuAD JSON file, read and parsed once.

  Attributes:
    path: where it was read.
    data: its parsed JSON (SQuAD's `{"version": ..., "data": [articles]}`,
      checked by `read_squad_json`).
    sha256: the hex sha256 of its bytes (the feature cache's fingerprint).
  """
  path: str
  data: Any
  sha256: str
  # `read_squad_json`'s readings by (is_training, articles).
  _questions: dict = dataclasses.field(default_factory=dict, init=False,
                                       repr=False, compare=False)

  def questions(self, is_training: bool, version: Optional[str] = None,
                articles: Optional[Iterable[int]] = None) -> tuple[list, str]:
    """`read_squad_json` of this file, read once per `is_training` and
    `articles`: a later call with `version` None or the file's own version
    reuses that reading (the question list is shared; do not change it)."""
    key = (bool(is_training), None if articles is None else tuple(articles))
    if key not in self._questions:
      self._questions[key] = read_squad_json(self.data, self.path,
                                             is_training, None, articles)
    examples, file_version = self._questions[key]
    if version is None or version == file_version:
      return examples, file_version
    return read_squad_json(self.data, self.path, is_training, version,
                           articles)


def load_squad_file(path) -> SquadFile:
  """Reads and parses a SQuAD JSON file (any TensorFlow filesystem).

  Raises:
    SquadDataError: the file is missing, not UTF-8 or not JSON.
  """
  path = os.fspath(path)
  contents = _read_file(path)
  return SquadFile(path, _parse_json(contents, path),
                   hashlib.sha256(contents).hexdigest())


def read_squad_file(path, is_training: bool, version: Optional[str] = None,
                    articles: Optional[Iterable[int]] = None
                    ) -> tuple[list, str]:
  """Reads the questions of a SQuAD JSON file.

  Args:
    path: the SQuAD 1.1 or 2.0 JSON file (any TensorFlow filesystem).
    is_training: read the training answer of each question (`answers[0]`), as
      the original does for its train split only.
    version: "1.1" or "2.0"; None detects it from the file.
    articles: indices into the file's `data` list to keep (file order kept);
      None keeps all.

  Returns:
    `(examples, version)`.

  Raises:
    SquadDataError: the file is missing, not JSON, not SQuAD's layout, or has a
      corrupt question (see `read_squad_json`).
  """
  squad_file = load_squad_file(path)
  return read_squad_json(squad_file.data, squad_file.path, is_training,
                         version, articles)


def read_squad_json(data, path, is_training: bool,
                    version: Optional[str] = None,
                    articles: Optional[Iterable[int]] = None
                    ) -> tuple[list, str]:
  """`read_squad_file` on the already parsed JSON `data` of file `path`."""
  reader = _Reader(os.fspath(path), is_training)
  all_articles = reader.articles(data)
  has_impossible = reader.check_layout(all_articles)
  if version is None:
    version = _declared_version(data) or ("2.0" if has_impossible else "1.1")
  elif version not in VERSIONS:
    raise ValueError(f"version must be one of {VERSIONS}, not {version!r}")
  selected = all_articles
  if articles is not None:
    indices = reader.article_indices(articles, len(all_articles))
    selected = [all_articles[index] for index in indices]
  examples = []
  for article_index, article in selected:
    for paragraph in article["paragraphs"]:
      examples.extend(reader.paragraph_examples(paragraph, version == "2.0"))
  if reader.skipped:
    logging.warning("%s: skipped %d of %d training questions, as the original "
                    "does (answer past the context or not in its words)",
                    path, reader.skipped, reader.skipped + len(examples))
  return examples, version


def _declared_version(data):
  """The file's "version" ("1.1", "v2.0", ...) as one of VERSIONS, else None."""
  declared = str(data.get("version", "")).strip().lstrip("vV")
  return declared if declared in VERSIONS else None


def _read_file(path):
  try:
    return files.read_bytes(path)
  except OSError as error:
    raise SquadDataError(f"cannot read SQuAD file {path} ({error.strerror}): "
                         "pass the path of a SQuAD JSON file") from None


def _parse_json(data, path):
  try:
    text = data.decode("utf-8")
  except UnicodeDecodeError as error:
    raise SquadDataError(f"SQuAD file {path} is not UTF-8 (byte "
                         f"{error.start}): pass the official JSON file"
                         ) from None
  try:
    return json.loads(text)
  except json.JSONDecodeError as error:
    raise SquadDataError(
        f"SQuAD file {path} is not valid JSON ({error.msg} at line "
        f"{error.lineno} column {error.colno}): pass the official JSON file "
        "or repair it") from None


class _Reader:
  """The checks and the example building of one file."""

  def __init__(self, path, is_training):
    self.path = path
    self.is_training = is_training
    self.skipped = 0

  def fail(self, where, what, fix="fix or remove it in the file"):
    raise SquadDataError(f"SQuAD file {self.path}: {where} {what}: {fix}")

  def field(self, record, key, kind, where):
    if not isinstance(record, dict) or key not in record:
      self.fail(where, f"has no {key!r} field (not SQuAD's layout)",
                "pass a SQuAD JSON file (data -> paragraphs -> qas)")
    value = record[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
      self.fail(where, f"has a {key!r} of type {type(value).__name__}, not "
                f"{getattr(kind, '__name__', kind)}",
                "pass a SQuAD JSON file (data -> paragraphs -> qas)")
    return value

  def articles(self, data):
    return list(enumerate(self.field(data, "data", list, "the top level")))

  def check_layout(self, articles):
    """Checks every question's fields; returns whether any has is_impossible."""
    seen_ids = {}
    has_impossible = False
    for article_index, article in articles:
      where = f"article {article_index}"
      for paragraph_index, paragraph in enumerate(
          self.field(article, "paragraphs", list, where)):
        where = f"article {article_index} paragraph {paragraph_index}"
        if not self.field(paragraph, "context", str, where).strip():
          self.fail(where, "has an empty context")
        for qa in self.field(paragraph, "qas", list, where):
          qas_id = self.field(qa, "id", str, f"a question of {where}")
          where_qa = f"question {qas_id!r} ({where})"
          if qas_id in seen_ids:
            self.fail(where_qa, "repeats the id of a question in "
                      f"{seen_ids[qas_id]}", "give every question its own id")
          seen_ids[qas_id] = where
          if not self.field(qa, "question", str, where_qa).strip():
            self.fail(where_qa, "has an empty question")
          if "answers" in qa:
            for answer in self.field(qa, "answers", list, where_qa):
              self.field(answer, "text", str, f"an answer of {where_qa}")
          if "is_impossible" in qa:
            has_impossible = True
            self.field(qa, "is_impossible", bool, where_qa)
    return has_impossible

  def article_indices(self, indices, count):
    indices = sorted(set(indices))
    outside = [index for index in indices if not 0 <= index < count]
    if outside:
      raise SquadDataError(
          f"SQuAD file {self.path} has {count} articles (0-{count - 1}); "
          f"articles {outside} do not exist: select indices below {count}")
    return indices

  def paragraph_examples(self, paragraph, v2):
    context = paragraph["context"]
    words, offsets, char_to_word = whitespace_words(context)
    words, offsets = tuple(words), tuple(offsets)
    examples = []
    for qa in paragraph["qas"]:
      answers = tuple(answer["text"] for answer in qa.get("answers", ()))
      is_impossible = bool(v2 and qa.get("is_impossible", False))
      answer_text, start_word, end_word = "", -1, -1
      if self.is_training and not is_impossible:
        labels = self.training_answer(qa, context, words, char_to_word)
        if labels is None:
          self.skipped += 1
          continue
        answer_text, start_word, end_word = labels
      examples.append(SquadExample(
          qas_id=qa["id"], question_text=qa["question"], context_text=context,
          doc_words=words, word_char_offsets=offsets, answers=answers,
          answer_text=answer_text, start_word=start_word, end_word=end_word,
          is_impossible=is_impossible))
    return examples

  def training_answer(self, qa, context, words, char_to_word):
    """`(text, start_word, end_word)` of `answers[0]`; None to skip."""
    where = f"training question {qa['id']!r}"
    if not qa.get("answers"):
      self.fail(where, "is answerable but has no answers",
                "add its answer or mark it is_impossible (SQuAD 2.0)")
    answer = qa["answers"][0]
    text = answer["text"]
    start = self.field(answer, "answer_start", int, f"the answer of {where}")
    if not text:
      self.fail(where, "has an empty answer text")
    if start + len(text) > len(context):
      logging.info("%s: End position is out of document! (question %r)",
                   self.path, qa["id"])
      return None
    found = context[max(start, 0):start + len(text)]
    if start < 0 or found != text:
      self.fail(where, f"has answer_start {start}, where the context reads "
                f"{found!r}, not the answer {text!r}",
                "correct its answer_start or text")
    start_word = char_to_word[start]
    end_word = char_to_word[start + len(text) - 1]
    actual = " ".join(words[start_word:end_word + 1]).lower()
    cleaned = " ".join(text.split()).lower()
    if start_word < 0 or cleaned not in actual:
      logging.info("%s: Could not find answer: %r in doc vs. %r in provided "
                   "answer (question %r)", self.path, actual, cleaned, qa["id"])
      return None
    return text, start_word, end_word
