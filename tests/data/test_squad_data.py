"""Tests for the SQuAD reader, windows (data/squad.py) and feature cache
(data/squad_cache.py)."""

import json
import logging
from unittest import mock

import numpy as np
import pytest

from official_electra.data import squad
from official_electra.data import squad_cache
from official_electra.data import squad_windows
from official_electra.tokenization.wordpiece_tokenizer import WordpieceTokenizer
from tests import conftest

_NUMBERED = tuple(f"t{i}" for i in range(60))
_WORDS = ("the", "leader", "was", "john", "smith", "(", ")", "-", ".", "?",
          "1895", "1943", "what", "year", "born", "who", "where", "is", "it",
          "in", "paris", "here", "foo", "bar", "baz") + _NUMBERED
_LONG_CONTEXT = " ".join(_NUMBERED[:40])


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                             *_WORDS]) + "\n", encoding="utf-8")
  return WordpieceTokenizer(path, lower_case=True)


def _question(qas_id, question, answer=None, context=None, **fields):
  """A `qas` entry; `answer` (text) is located in `context` when given."""
  qa = {"id": qas_id, "question": question, "answers": []}
  if answer is not None:
    qa["answers"] = [{"text": answer, "answer_start": context.index(answer)}]
  qa.update(fields)
  return qa


def _squad(paragraphs_per_article, version="1.1"):
  """A SQuAD JSON value: articles of `(context, [qas])` paragraphs."""
  return {"version": version, "data": [
      {"title": f"article{index}", "paragraphs": [
          {"context": context, "qas": qas} for context, qas in paragraphs]}
      for index, paragraphs in enumerate(paragraphs_per_article)]}


def _write(tmp_path, data, name="data.json"):
  path = tmp_path / name
  path.write_text(data if isinstance(data, str) else json.dumps(data),
                  encoding="utf-8")
  return path


_SMITH = "The leader was John Smith (1895-1943)."


def _smith_file(tmp_path):
  return _write(tmp_path, _squad([[(_SMITH, [
      _question("q1", "What year was John Smith born?", "1895", _SMITH),
      _question("q2", "Who was the leader?", "John Smith", _SMITH)])]]))


def test_whitespace_words_with_odd_whitespace():
  text = "  ab\u202fc\t\td\r\ne\u00a0f "
  words, offsets, char_to_word = squad.whitespace_words(text)
  assert words == ["ab", "c", "d", "e\u00a0f"]  # NBSP is no separator
  assert offsets == [(2, 4), (5, 6), (8, 9), (11, 14)]
  assert [text[start:end] for start, end in offsets] == words
  # Leading whitespace -> -1; whitespace maps to the word before it.
  assert char_to_word == [-1, -1, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3]


def test_training_examples_and_version(tmp_path):
  examples, version = squad.read_squad_file(_smith_file(tmp_path), True)
  assert version == "1.1"
  first, second = examples
  assert first.doc_words == ("The", "leader", "was", "John", "Smith",
                             "(1895-1943).")
  assert (first.start_word, first.end_word) == (5, 5)
  assert (second.start_word, second.end_word, second.answer_text) == (
      3, 4, "John Smith")
  assert first.word_char_offsets[5] == (26, 38)
  assert not first.is_impossible


def test_eval_examples_keep_every_answer_and_no_labels(tmp_path):
  qa = _question("q1", "Who?", "John Smith", _SMITH)
  qa["answers"].append({"text": "Smith", "answer_start": 20})
  path = _write(tmp_path, _squad([[(_SMITH, [qa])]]))
  (example,), _ = squad.read_squad_file(path, False)
  assert example.answers == ("John Smith", "Smith")
  assert (example.answer_text, example.start_word, example.end_word) == ("", -1,
                                                                         -1)


@pytest.mark.parametrize("declared,impossible_field,expected", [
    ("1.1", False, "1.1"), ("v2.0", False, "2.0"), (None, True, "2.0"),
    (None, False, "1.1")])
def test_version_detection(tmp_path, declared, impossible_field, expected):
  fields = {"is_impossible": False} if impossible_field else {}
  data = _squad([[(_SMITH, [_question("q1", "Who?", "John", _SMITH,
                                      **fields)])]])
  if declared is None:
    del data["version"]
  else:
    data["version"] = declared
  assert squad.read_squad_file(_write(tmp_path, data), True)[1] == expected


def test_training_skips_what_the_original_skips(tmp_path, caplog):
  context = "foo\u00a0bar baz"
  past_end = _question("past", "Who?")
  past_end["answers"] = [{"text": "baz qux", "answer_start": 8}]
  path = _write(tmp_path, _squad([[(context, [
      _question("kept", "Who?", "baz", context),
      past_end,
      # The slice matches, but the whitespace-normalised answer "foo bar" is
      # not in the word "foo\u00a0bar": the original skips it.
      _question("unfindable", "Who?", "foo\u00a0bar", context)])]]))
  with caplog.at_level(logging.INFO, logger="absl"):
    examples, _ = squad.read_squad_file(path, True)
  assert [example.qas_id for example in examples] == ["kept"]
  messages = [record.getMessage() for record in caplog.records]
  assert any("End position is out of document" in m and "'past'" in m
             for m in messages)
  assert any("Could not find answer" in m and "'unfindable'" in m
             for m in messages)
  assert any("skipped 2 of 3 training questions" in m for m in messages)
  # Evaluation reads them all.
  assert len(squad.read_squad_file(path, False)[0]) == 3


def test_article_selection(tmp_path):
  data = _squad([[("foo bar", [_question(f"a{i}", "Who?", "foo", "foo bar")])]
                 for i in range(4)])
  path = _write(tmp_path, data)
  examples, _ = squad.read_squad_file(path, True, articles=[3, 1])
  assert [example.qas_id for example in examples] == ["a1", "a3"]
  assert squad.parse_article_indices("0-2,5") == (0, 1, 2, 5)
  assert squad.parse_article_indices("40-47") == tuple(range(40, 48))
  with pytest.raises(squad.SquadDataError, match="articles \\[4\\] do not"):
    squad.read_squad_file(path, True, articles=range(5))
  with pytest.raises(squad.SquadDataError, match="e.g. 0-39"):
    squad.parse_article_indices("0-x")


def test_improved_answer_span(tokenizer, tmp_path):
  examples, _ = squad.read_squad_file(_smith_file(tmp_path), True)
  windows = squad_windows.featurize(examples, tokenizer, 32, 8, 16, True)
  first = windows[0]
  # The word is "(1895-1943).", the improved span its token "1895".
  assert first.tokens[first.start_position:first.end_position + 1] == ("1895",)
  second = windows[1]
  assert second.tokens[second.start_position:second.end_position + 1] == (
      "john", "smith")


def test_layout_segment_ids_and_padding(tokenizer, tmp_path):
  context = "the leader was john smith ."
  path = _write(tmp_path, _squad([[(context, [
      _question("q", "Who ?", "john smith", context)])]]))
  examples, _ = squad.read_squad_file(path, True)
  (window,) = squad_windows.featurize(examples, tokenizer, 16, 8, 8, True)
  assert window.tokens == ("[CLS]", "who", "?", "[SEP]", "the", "leader", "was",
                           "john", "smith", ".", "[SEP]")
  vocabulary = tokenizer.vocabulary
  assert window.input_word_ids.tolist() == [
      vocabulary.index(token) for token in window.tokens] + [0] * 5
  assert window.input_mask.tolist() == [1] * 11 + [0] * 5
  assert window.input_type_ids.tolist() == [0] * 4 + [1] * 7 + [0] * 5
  assert window.input_word_ids.dtype == np.int32
  assert window.token_to_orig_map == {4: 0, 5: 1, 6: 2, 7: 3, 8: 4, 9: 5}
  assert window.token_is_max_context == {position: True
                                         for position in range(4, 10)}
  assert (window.start_position, window.end_position) == (7, 8)
  assert window.unique_id == 0


def _long_examples(tmp_path, version="1.1", impossible=False):
  """Two questions on a 40-token context: answers t3 and t35, plus (v2) one
  impossible question."""
  qas = [_question("early", "What year ?", "t3", _LONG_CONTEXT),
         _question("late", "What year ?", "t35", _LONG_CONTEXT)]
  if impossible:
    qas.append(_question("none", "What year ?", is_impossible=True))
  path = _write(tmp_path, _squad([[(_LONG_CONTEXT, qas)]], version))
  return squad.read_squad_file(path, True)[0]


def test_windows_with_stride_and_out_of_window_labels(tokenizer, tmp_path):
  examples = _long_examples(tmp_path)
  # 20 - 3 question tokens - 3 = 14 tokens per window, stride 5.
  windows = squad_windows.featurize(examples, tokenizer, 20, 5, 8, True)
  early = [window for window in windows if window.example_index == 0]
  late = [window for window in windows if window.example_index == 1]
  assert len(early) == len(late) == 7  # windows start at 0, 5, ..., 30
  starts = [window.token_to_orig_map[5] for window in early]
  assert starts == [0, 5, 10, 15, 20, 25, 30]
  assert len(early[-1].token_to_orig_map) == 10  # ends at the document end
  # t3 (doc token 3) lies in the first window only; doc offset = 3 + 2.
  assert [(w.start_position, w.end_position) for w in early] == (
      [(8, 8)] + [(0, 0)] * 6)
  # t35 lies in the windows starting at 25 and 30: kept everywhere else as CLS.
  assert [(w.start_position, w.end_position) for w in late] == (
      [(0, 0)] * 5 + [(15, 15), (10, 10)])
  assert late[5].tokens[15] == late[6].tokens[10] == "t35"
  assert [w.unique_id for w in late] == [1000 + index for index in range(7)]
  assert not any(window.is_impossible for window in windows)


def test_max_context_flags(tokenizer, tmp_path):
  examples = _long_examples(tmp_path)
  windows = squad_windows.featurize(examples, tokenizer, 20, 5, 8, True)[:7]
  owners = {}
  for window in windows:
    for position, is_max in window.token_is_max_context.items():
      word = window.token_to_orig_map[position]
      if is_max:
        assert word not in owners, f"t{word} is max context twice"
        owners[word] = window.window_index
  assert sorted(owners) == list(range(40))  # exactly one window per token
  # t7: window 0 (left 7, right 6) beats window 1 (left 2, right 11).
  assert owners[7] == 0
  # t12: window 1 (5-18: left 7, right 6) beats 0 and 2.
  assert owners[12] == 1
  # t9: windows 0 and 1 both score 4 + 0.14; the first wins the tie.
  assert owners[9] == 0
  # t34: windows 5 (25-38: min 4 + 0.14) and 6 (30-39: min 4 + 0.10).
  assert owners[34] == 5


def test_v2_impossible_labels(tokenizer, tmp_path):
  examples = _long_examples(tmp_path, version="v2.0", impossible=True)
  assert [example.is_impossible for example in examples] == [False, False,
                                                             True]
  assert (examples[2].start_word, examples[2].answer_text) == (-1, "")
  windows = squad_windows.featurize(examples, tokenizer, 20, 5, 8, True)
  impossible = [window for window in windows if window.example_index == 2]
  assert impossible and all(
      window.is_impossible and window.start_position == window.end_position == 0
      for window in impossible)
  # An answerable question's windows without the answer are not impossible.
  late = [window for window in windows if window.example_index == 1]
  assert late[0].start_position == 0 and not late[0].is_impossible
  arrays = squad_windows.stack_windows(windows)
  assert arrays["is_impossible"].dtype == np.float32
  assert arrays["is_impossible"].tolist() == [float(w.is_impossible)
                                              for w in windows]
  assert arrays["input_word_ids"].shape == (len(windows), 20)
  assert arrays["unique_ids"].dtype == np.int64
  assert arrays["start_positions"].dtype == np.int32


def test_words_are_tokenized_in_one_batched_call(tokenizer, tmp_path):
  examples = _long_examples(tmp_path)
  with mock.patch.object(tokenizer, "tokenize_to_numpy",
                         wraps=tokenizer.tokenize_to_numpy) as spy:
    squad_windows.featurize(examples, tokenizer, 20, 5, 8, True)
  assert spy.call_count == 1
  (texts,), _ = spy.call_args
  # Each distinct text once: 40 words (the answers among them), 1 question.
  assert len(texts) == len(set(texts)) == 41


def _bad_files():
  good = _question("q1", "Who?", "John", _SMITH)
  mismatched = _question("q1", "Who?", "John", _SMITH)
  mismatched["answers"][0]["answer_start"] = 4
  return {
      "malformed JSON": ('{"data": [', "is not valid JSON"),
      "no data list": ({"version": "1.1"}, "has no 'data' field"),
      "data not a list": ({"data": {}}, "'data' of type dict"),
      "no paragraphs": ({"data": [{"title": "x"}]}, "no 'paragraphs' field"),
      "no qas": ({"data": [{"paragraphs": [{"context": _SMITH}]}]},
                 "no 'qas' field"),
      "no context": ({"data": [{"paragraphs": [{"qas": [good]}]}]},
                     "no 'context' field"),
      "empty context": (_squad([[("  \n", [good])]]), "empty context"),
      "no question": (_squad([[(_SMITH, [{"id": "q1", "answers": []}])]]),
                      "no 'question' field"),
      "no id": (_squad([[(_SMITH, [{"question": "Who?"}])]]), "no 'id' field"),
      "mismatched answer_start": (
          _squad([[(_SMITH, [mismatched])]]),
          "question 'q1' has answer_start 4, where the context reads 'lead', "
          "not the answer 'John'"),
      "empty question": (_squad([[(_SMITH, [_question("q1", " \t", "John",
                                                      _SMITH)])]]),
                         "empty question"),
      "duplicate ids": (_squad([[(_SMITH, [good, good])]]),
                        "repeats the id of"),
      "no answers": (_squad([[(_SMITH, [_question("q1", "Who?")])]]),
                     "answerable but has no answers"),
      "answer_start not int": (
          _squad([[(_SMITH, [dict(good, answers=[{"text": "John",
                                                   "answer_start": "15"}])])]]),
          "'answer_start' of type str"),
      "is_impossible not bool": (
          _squad([[(_SMITH, [dict(good, is_impossible="no")])]]),
          "'is_impossible' of type str"),
  }


@pytest.mark.parametrize("case", sorted(_bad_files()))
def test_bad_inputs_raise_one_line_and_write_nothing(tokenizer, tmp_path,
                                                     case):
  data, expected = _bad_files()[case]
  path = _write(tmp_path, data)
  cache_dir = tmp_path / "cache"
  with pytest.raises(squad.SquadDataError) as raised:
    squad_cache.load_or_build_features(
        squad.load_squad_file(path), tokenizer, max_seq_length=32,
        doc_stride=8, max_query_length=8, is_training=True,
        cache_dir=str(cache_dir))
  message = str(raised.value)
  assert expected in message
  assert "\n" not in message and str(path) in message
  assert not cache_dir.exists()


def test_missing_file_raises_one_line(tokenizer, tmp_path):
  with pytest.raises(squad.SquadDataError, match="cannot read SQuAD file .*"
                     "missing.json"):
    squad.read_squad_file(tmp_path / "missing.json", True)


def test_question_leaving_no_room_for_the_context(tokenizer, tmp_path):
  cache_dir = tmp_path / "cache"
  with pytest.raises(squad.SquadDataError) as raised:
    squad_cache.load_or_build_features(
        squad.load_squad_file(_smith_file(tmp_path)), tokenizer,
        max_seq_length=10, doc_stride=8, max_query_length=16,
        is_training=True, cache_dir=str(cache_dir))
  message = str(raised.value)
  assert "\n" not in message
  assert ("question 'q1' keeps 7 tokens, which leaves 0 of max_seq_length "
          "10") in message
  assert "raise max_seq_length or lower max_query_length" in message
  assert not cache_dir.exists()


def _assert_windows_equal(actual, expected):
  assert len(actual) == len(expected)
  for left, right in zip(actual, expected):
    for field in ("unique_id", "example_index", "window_index", "tokens",
                  "token_to_orig_map", "token_is_max_context",
                  "start_position", "end_position", "is_impossible"):
      assert getattr(left, field) == getattr(right, field), field
    for field in ("input_word_ids", "input_mask", "input_type_ids"):
      np.testing.assert_array_equal(getattr(left, field), getattr(right, field))
      assert getattr(left, field).dtype == np.int32


def test_cache_is_written_then_reused(tokenizer, tmp_path):
  path = _write(tmp_path, _squad([[(_LONG_CONTEXT, [
      _question("early", "What year ?", "t3", _LONG_CONTEXT),
      _question("late", "What year ?", "t35", _LONG_CONTEXT)]),
      (_SMITH, [_question("q1", "Who was born?", "1895", _SMITH)])]],
      version="v2.0"))
  squad_file = squad.load_squad_file(path)
  settings = dict(max_seq_length=20, doc_stride=5, max_query_length=8,
                  is_training=True, cache_dir=str(tmp_path / "cache"))
  examples, windows, version = squad_cache.load_or_build_features(
      squad_file, tokenizer, **settings)
  names = sorted(p.name for p in (tmp_path / "cache").iterdir())
  assert len(names) == 2 and names[0].startswith("squad_train_")
  assert {name.rsplit(".", 1)[1] for name in names} == {"json", "tfrecord"}
  assert version == "2.0" and len(examples) == 3
  _assert_windows_equal(windows, squad_windows.featurize(
      examples, tokenizer, 20, 5, 8, True))
  with mock.patch.object(squad_windows, "featurize_with_word_maps",
                         side_effect=AssertionError("not read from cache")):
    examples_again, cached, _ = squad_cache.load_or_build_features(
        squad_file, tokenizer, **settings)
  assert examples_again == examples
  _assert_windows_equal(cached, windows)
  # Another setting is another cache; a corrupt cache is rebuilt.
  squad_cache.load_or_build_features(squad_file, tokenizer,
                                     **dict(settings, doc_stride=6))
  assert len(list((tmp_path / "cache").iterdir())) == 4
  record_file = tmp_path / "cache" / names[1]
  record_file.write_bytes(record_file.read_bytes()[:-9])
  _, rebuilt, _ = squad_cache.load_or_build_features(squad_file, tokenizer,
                                                     **settings)
  _assert_windows_equal(rebuilt, windows)
  assert not list((tmp_path / "cache").glob("*.tmp"))


def _original_featurize(example, bert_tokenizer, max_seq_length, doc_stride,
                        max_query_length):
  """A line-by-line transcription of the original's featurize (training)."""
  query = bert_tokenizer.tokenize(example.question_text)[:max_query_length]
  tok_to_orig, orig_to_tok, doc_tokens = [], [], []
  for index, word in enumerate(example.doc_words):
    orig_to_tok.append(len(doc_tokens))
    for sub_token in bert_tokenizer.tokenize(word):
      tok_to_orig.append(index)
      doc_tokens.append(sub_token)
  start = orig_to_tok[example.start_word]
  end = (orig_to_tok[example.end_word + 1] - 1
         if example.end_word < len(example.doc_words) - 1
         else len(doc_tokens) - 1)
  answer = " ".join(bert_tokenizer.tokenize(example.answer_text))
  improved = [(s, e) for s in range(start, end + 1) for e in
              range(end, s - 1, -1) if " ".join(doc_tokens[s:e + 1]) == answer]
  start, end = improved[0] if improved else (start, end)
  max_tokens = max_seq_length - len(query) - 3
  spans, offset = [], 0
  while offset < len(doc_tokens):
    length = min(len(doc_tokens) - offset, max_tokens)
    spans.append((offset, length))
    if offset + length == len(doc_tokens):
      break
    offset += min(length, doc_stride)
  results = []
  for span_index, (span_start, length) in enumerate(spans):
    tokens = ["[CLS]", *query, "[SEP]"]
    token_to_orig, is_max = {}, {}
    for i in range(length):
      position = span_start + i
      token_to_orig[len(tokens)] = tok_to_orig[position]
      best, best_index = None, None
      for other_index, (other_start, other_length) in enumerate(spans):
        if other_start <= position <= other_start + other_length - 1:
          score = min(position - other_start,
                      other_start + other_length - 1 - position
                      ) + 0.01 * other_length
          if best is None or score > best:
            best, best_index = score, other_index
      is_max[len(tokens)] = best_index == span_index
      tokens.append(doc_tokens[position])
    tokens.append("[SEP]")
    labels = (0, 0)
    if start >= span_start and end <= span_start + length - 1:
      labels = (start - span_start + len(query) + 2,
                end - span_start + len(query) + 2)
    results.append((tuple(tokens), token_to_orig, is_max, labels))
  return results


@pytest.fixture(scope="module")
def dev_file():
  path = conftest.SHARED_DIR / "data" / "squad" / "dev-v1.1.json"
  if not path.is_file():
    conftest.missing_shared_data(f"{path} is absent")
  return path


def test_windows_equal_the_original_on_dev_questions(dev_file, bert_vocab_file):
  transformers = pytest.importorskip("transformers")
  bert_tokenizer = transformers.BertTokenizer(str(bert_vocab_file),
                                              do_lower_case=True)
  tokenizer = WordpieceTokenizer(bert_vocab_file, lower_case=True)
  examples, _ = squad.read_squad_file(dev_file, True)
  examples = examples[:150] + examples[-150:]
  # Short windows so that most contexts need several.
  windows = squad_windows.featurize(examples, tokenizer, 96, 32, 24, True)
  expected = [window for example in examples for window in
              _original_featurize(example, bert_tokenizer, 96, 32, 24)]
  assert len(windows) == len(expected) > 2 * len(examples)
  for window, (tokens, token_to_orig, is_max, labels) in zip(windows, expected):
    assert window.tokens == tokens
    assert window.token_to_orig_map == token_to_orig
    assert window.token_is_max_context == is_max
    assert (window.start_position, window.end_position) == labels
