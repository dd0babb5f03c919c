"""The exported SQuAD model answers raw questions as the Python pipeline does.

The reference answer of each question is computed here in Python from the
same model's `predict` on the windows `data/squad.py` builds, with the
original's candidate rules (ELECTRA_REFERENCE_SQUAD.md section 4), and
cross-checked against `squad_postprocessing.postprocess`'s best score.
"""

import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the tokenizer's ops for loading

from official_electra import files
from official_electra.data import squad
from official_electra.data import squad_windows
from official_electra.finetuning import squad_family
from official_electra.finetuning import squad_postprocessing
from official_electra.modeling import classifier_checkpoint
from official_electra.modeling import encoder_config
from official_electra.modeling import finetuned_checkpoint
from official_electra.modeling import span_labeler_checkpoint
from official_electra.modeling.models import electra_span_labeler
from official_electra.serving import classifier_export
from official_electra.serving import finetuned_export
from official_electra.serving import op_allowlist
from official_electra.serving import qa_export
from official_electra.serving import qa_graph
from official_electra.tokenization import wordpiece_tokenizer
from tests import conftest
from tests.serving import saved_model_cli

_MAX_SEQ_LENGTH = 24
_INPUT_KEYS = ("input_word_ids", "input_mask", "input_type_ids")
_WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "in", "park", "who",
          "where", "did", "is", "a", "smith", "'", "s", "caf", "##e", "play",
          "##ing", "##ed", ",", ".", "?", "john", "house", "red", "big", "and",
          "to", "of", "with"]
_LONG_CONTEXT = (
    "John Smith's red house is in the park , and the dog ran to the  cat .\n"
    "The big cat sat on a mat with the dog ; John played in the\tCafé .\u202f"
    "Who ran ? The dog ran with Smith and the cat sat on the red mat of the "
    "big house . A dog , a cat and John were playing in the park.")
_PAIRS = [
    ("Where did the cat sit?", "The cat sat on the mat."),
    ("Who ran to the park with the big red dog and the cat?", _LONG_CONTEXT),
    ("Where is the house?", "Smith's house is in the park , near the Café."),
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                             *_WORDS]) + "\n", encoding="utf-8")
  return wordpiece_tokenizer.WordpieceTokenizer(path, lower_case=True)


def _squad_run(folder, tokenizer, task_name, **settings):
  """A SQuAD seed folder (random weights) and its model and settings."""
  settings = squad_family.SquadSettings(
      doc_stride=6, max_query_length=5, beam_size=5, n_best_size=6,
      max_answer_length=6, head_hidden_size=16, **settings)
  tf.random.set_seed(len(task_name))
  encoder = encoder_config.build_encoder(encoder_config.EncoderConfig(
      vocab_size=tokenizer.vocab_size, embedding_size=16, hidden_size=32,
      num_layers=1, num_attention_heads=2, intermediate_size=32,
      max_position_embeddings=32))
  model = electra_span_labeler.ElectraSpanLabeler(encoder,
                                                  settings.head_config())
  model({key: tf.zeros([1, 4], tf.int32) for key in _INPUT_KEYS})
  family = squad_family.SquadFamily(task_name, "train.json", "dev.json",
                                    settings, str(folder / "cache"))
  run_dir = folder / task_name / "seed_0"
  finetuned_checkpoint.save_finetuned(model, str(run_dir), tokenizer,
                                      _MAX_SEQ_LENGTH,
                                      family.describe(model, None))
  files.write_json(str(folder / task_name / "eval_results.json"),
                   {"selected_seed": 0})
  return model, settings, str(run_dir)


def _python_answers(model, tokenizer, settings, version, pairs=_PAIRS):
  """Per pair: (answer text, char start, char end, score, null odds)."""
  data = {"version": version, "data": [{"title": "t", "paragraphs": [
      {"context": context, "qas": [{"id": str(i), "question": question,
                                    "answers": []}]}
      for i, (question, context) in enumerate(pairs)]}]}
  examples, _ = squad.read_squad_json(data, "test.json", is_training=False)
  windows = squad_windows.featurize(examples, tokenizer, _MAX_SEQ_LENGTH,
                            settings.doc_stride, settings.max_query_length,
                            is_training=False)
  assert max(w.window_index for w in windows) >= 3  # The long context.
  arrays = squad_windows.stack_windows(windows)
  outputs = model.predict({key: arrays[key] for key in _INPUT_KEYS},
                          verbose=0)
  answers = []
  for example_index, example in enumerate(examples):
    candidates = []
    for row, window in enumerate(windows):
      if window.example_index == example_index:
        candidates.extend(_window_candidates(window, row, outputs, settings))
    score, start, end, window = max(candidates, key=lambda c: c[0])
    first = window.token_to_orig_map[start]
    last = window.token_to_orig_map[end]
    answers.append((" ".join(example.doc_words[first:last + 1]),
                    example.word_char_offsets[first][0],
                    example.word_char_offsets[last][1], score))
  processed = squad_postprocessing.postprocess(
      examples, windows, outputs, joint_prediction=settings.joint_prediction,
      version=version, n_best_size=settings.n_best_size,
      max_answer_length=settings.max_answer_length)
  for answer, example in zip(answers, examples):
    best = processed.nbest[example.qas_id][0]
    assert best["start_logit"] + best["end_logit"] == pytest.approx(answer[3])
  return answers, processed.null_odds, outputs, arrays


def _window_candidates(window, row, outputs, settings):
  """(score, start, end, window) kept by the original's rules, in its order."""
  if settings.joint_prediction:
    pairs = [(outputs["start_top_log_probs"][row][i] +
              outputs["end_top_log_probs"][row][i][j],
              outputs["start_top_index"][row][i],
              outputs["end_top_index"][row][i][j])
             for i in range(settings.beam_size)
             for j in range(settings.beam_size)]
  else:
    start_logits = outputs["start_logits"][row]
    end_logits = outputs["end_logits"][row]
    count = settings.n_best_size
    best_starts = np.argsort(-start_logits, kind="stable")[:count]
    best_ends = np.argsort(-end_logits, kind="stable")[:count]
    pairs = [(start_logits[s] + end_logits[e], s, e)
             for s in best_starts for e in best_ends]
  return [(score, int(start), int(end), window)
          for score, start, end in pairs
          if start in window.token_to_orig_map and
          end in window.token_to_orig_map and
          window.token_is_max_context[start] and end >= start and
          end - start + 1 <= settings.max_answer_length]


def _check_text_signature(served, answers, pairs=_PAIRS):
  contexts = [context for _, context in pairs]
  for index, (text, start, end, score) in enumerate(answers):
    answer = served["answer"][index].decode()
    assert (served["answer_start"][index], served["answer_end"][index]) == (
        start, end)
    assert answer == contexts[index][start:end]
    assert " ".join(answer.split()) == text  # The original's orig_text.
    assert served["score"][index] == pytest.approx(score, abs=1e-5)


def _serve(export_dir, signature, **inputs):
  function = tf.saved_model.load(export_dir).signatures[signature]
  return {name: value.numpy()
          for name, value in function(**{
              name: tf.constant(value) for name, value in inputs.items()
          }).items()}


def test_squad_2_joint_export_answers_as_python_and_in_a_fresh_process(
    tmp_path, tokenizer):
  model, settings, run_dir = _squad_run(tmp_path, tokenizer, "SQuAD-2.0",
                                        null_threshold=-1.0)
  answers, null_odds, outputs, arrays = _python_answers(model, tokenizer,
                                                        settings, "2.0")
  export_dir = str(tmp_path / "export" / "1")
  assert finetuned_export.export_finetuned(str(tmp_path),
                                           export_dir) == run_dir
  op_types = op_allowlist.check_serving_op_types(export_dir)
  assert not any(op.startswith("TFText>") for op in op_types)

  served = _serve(export_dir, "serving_default",
                  question=[q for q, _ in _PAIRS],
                  context=[c for _, c in _PAIRS])
  _check_text_signature(served, answers)
  expected_null = np.array([null_odds[str(i)] for i in range(len(_PAIRS))])
  np.testing.assert_allclose(served["null_score"], expected_null, atol=1e-5)
  np.testing.assert_array_equal(served["has_answer"],
                                expected_null <= settings.null_threshold)

  token_outputs = _serve(export_dir, "serve_token_ids",
                         **{key: arrays[key] for key in _INPUT_KEYS})
  assert sorted(token_outputs) == sorted(outputs)
  for name, value in outputs.items():
    np.testing.assert_allclose(token_outputs[name], value, atol=1e-5)

  question, context = _PAIRS[0]
  fresh = saved_model_cli.run_signature(
      export_dir, "serving_default",
      f"question={[question]!r};context={[context]!r}",
      str(tmp_path / "cli_outputs"))
  assert fresh["answer"][0].decode() == served["answer"][0].decode()
  assert (fresh["answer_start"][0], fresh["answer_end"][0]) == (
      served["answer_start"][0], served["answer_end"][0])
  assert fresh["null_score"][0] == pytest.approx(served["null_score"][0],
                                                 abs=1e-5)


def test_squad_1_independent_export_answers_as_python(tmp_path, tokenizer):
  model, settings, run_dir = _squad_run(
      tmp_path, tokenizer, "SQuAD-1.1", joint_prediction=False,
      answerable_classifier=False)
  answers, _, _, _ = _python_answers(model, tokenizer, settings, "1.1")
  export_dir = str(tmp_path / "export")
  assert qa_export.export_question_answering(
      str(tmp_path / "SQuAD-1.1"), export_dir) == run_dir
  served = _serve(export_dir, "serving_default",
                  question=[q for q, _ in _PAIRS],
                  context=[c for _, c in _PAIRS])
  assert sorted(served) == ["answer", "answer_end", "answer_start", "score"]
  _check_text_signature(served, answers)

  with pytest.raises(classifier_export.ExportError, match="already exists"):
    qa_export.export_question_answering(run_dir, export_dir)


def test_squad_2_without_classifier_scores_null_as_the_original(tmp_path,
                                                                 tokenizer):
  # The module in eager mode; also the window cap and an empty context.
  model, settings, run_dir = _squad_run(
      tmp_path, tokenizer, "SQuAD-2.0", joint_prediction=False,
      answerable_classifier=False)
  answers, null_odds, _, _ = _python_answers(model, tokenizer, settings, "2.0")
  loaded = qa_export.load_finetuned_run(run_dir)
  served = qa_export.QuestionAnsweringServingModule(*loaded).serve_text(
      tf.constant([q for q, _ in _PAIRS]), tf.constant([c for _, c in _PAIRS]))
  served = {name: value.numpy() for name, value in served.items()}
  _check_text_signature(served, answers)
  np.testing.assert_allclose(
      served["null_score"], [null_odds[str(i)] for i in range(len(_PAIRS))],
      atol=1e-5)

  capped = qa_export.QuestionAnsweringServingModule(*loaded, max_windows=1)
  outputs = capped.serve_text(tf.constant(["Who ran?", "Who ran?"]),
                              tf.constant([_LONG_CONTEXT, " \n "]))
  # The first window's 18 tokens end with "cat".
  assert 0 <= outputs["answer_end"][0] <= _LONG_CONTEXT.index("cat .") + 3
  assert outputs["answer"][1].numpy() == b""
  assert outputs["answer_start"][1] == outputs["answer_end"][1] == -1
  empty = capped.serve_text(tf.constant([], tf.string),
                            tf.constant([], tf.string))
  assert all(value.shape == (0,) for value in empty.values())


def test_windows_and_max_context_match_featurize(tokenizer):
  served = qa_export.ServedSquad(
      version="1.1", joint_prediction=True, answerable_classifier=False,
      doc_stride=5, max_query_length=4, n_best_size=3, max_answer_length=3,
      null_threshold=0.0)
  tokens = qa_graph.question_and_context_tokens(
      tokenizer, served.max_query_length, tf.constant([q for q, _ in _PAIRS]),
      tf.constant([c for _, c in _PAIRS]))
  windows = qa_graph.context_windows(tokens, _MAX_SEQ_LENGTH,
                                     served.doc_stride, qa_export.MAX_WINDOWS)
  packed = qa_graph.pack_windows(tokenizer, tokens, windows)
  width = packed["input_word_ids"].shape[1]
  positions = tf.broadcast_to(tf.range(width), tf.shape(
      packed["input_word_ids"]))
  is_max_context = qa_graph.is_max_context(windows, positions).numpy()

  data = {"data": [{"paragraphs": [
      {"context": context, "qas": [{"id": str(i), "question": question}]}
      for i, (question, context) in enumerate(_PAIRS)]}]}
  examples, _ = squad.read_squad_json(data, "test.json", is_training=False)
  expected = squad_windows.featurize(examples, tokenizer, _MAX_SEQ_LENGTH, 5, 4,
                             is_training=False)
  assert len(expected) == len(windows["context"]) > 10
  arrays = squad_windows.stack_windows(expected)
  for key in _INPUT_KEYS:
    np.testing.assert_array_equal(packed[key], arrays[key][:, :width])
    assert not arrays[key][:, width:].any()
  all_flags = []
  for row, window in enumerate(expected):
    flags = [is_max_context[row][position]
             for position in window.token_is_max_context]
    assert flags == list(window.token_is_max_context.values())
    all_flags.extend(flags)
  assert 0 < sum(all_flags) < len(all_flags)


def test_dev_questions_are_answered_as_python(tmp_path, shared_data_dir,
                                              bert_vocab_file):
  # Real contexts (Unicode, punctuation, many windows) with BERT's vocabulary.
  data_file = shared_data_dir / "squad" / "dev-v1.1.json"
  if not data_file.is_file():
    conftest.missing_shared_data(f"{data_file} is absent")
  examples, _ = squad.read_squad_file(data_file, False, articles=[17, 40])
  pairs = [(e.question_text, e.context_text) for e in examples[::9][:16]]
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(bert_vocab_file,
                                                     lower_case=True)
  model, settings, run_dir = _squad_run(tmp_path, tokenizer, "SQuAD-2.0")
  answers, null_odds, _, _ = _python_answers(model, tokenizer, settings,
                                             "2.0", pairs)
  module = qa_export.QuestionAnsweringServingModule(
      *qa_export.load_finetuned_run(run_dir), max_windows=1000)
  served = tf.function(module.serve_text)(
      tf.constant([q for q, _ in pairs]), tf.constant([c for _, c in pairs]))
  served = {name: value.numpy() for name, value in served.items()}
  _check_text_signature(served, answers, pairs)
  np.testing.assert_allclose(
      served["null_score"], [null_odds[str(i)] for i in range(len(pairs))],
      atol=1e-5)


def test_export_errors_are_clear(tmp_path, tokenizer):
  _squad_run(tmp_path, tokenizer, "SQuAD-1.1")
  classifier = classifier_checkpoint.build_classifier(
      encoder_config.EncoderConfig(
          vocab_size=tokenizer.vocab_size, embedding_size=8, hidden_size=16,
          num_layers=1, num_attention_heads=2, intermediate_size=16,
          max_position_embeddings=32), 2, 0.1)
  classifier_dir = str(tmp_path / "SST-2" / "seed_0")
  classifier_checkpoint.save_classifier(classifier, classifier_dir, tokenizer,
                                        _MAX_SEQ_LENGTH, "SST-2", ["0", "1"],
                                        False)
  with pytest.raises(classifier_export.ExportError,
                     match="a fine-tuned classification model, not a span"):
    qa_export.export_question_answering(classifier_dir, str(tmp_path / "a"))
  with pytest.raises(classifier_export.ExportError, match=re.escape(
      f"{tmp_path} holds 2 fine-tuned tasks (SQuAD-1.1, SST-2): pass one of "
      f"them, e.g. --finetuned_dir={tmp_path / 'SQuAD-1.1'}")):
    finetuned_export.export_finetuned(str(tmp_path), str(tmp_path / "b"))
  with pytest.raises(classifier_export.ExportError, match=re.escape(
      f"{tmp_path / 'SST-2'} holds seed folders but no eval_results.json")):
    finetuned_export.export_finetuned(str(tmp_path / "SST-2"),
                                      str(tmp_path / "c"))
  with pytest.raises(finetuned_checkpoint.FinetunedCheckpointError,
                     match="not a span extraction"):
    span_labeler_checkpoint.load_span_labeler(classifier_dir)
  assert not any(files.exists(str(tmp_path / name)) for name in "abc")
