"""SQuAD through `official_electra.finetune`: the seed loop with the SQuAD task
family, end to end on a tiny model.

The overfit tests fine-tune a randomly initialised tiny encoder on about 100
synthetic questions whose contexts span several windows (answers in the
first and in later windows; for 2.0 a third of the questions unanswerable)
and score the same questions: each head must reach F1 above 90, through the
whole path (windows, labels, head, loss, beams, post-processing, official
metrics).
"""

import json
import os
import random
from unittest import mock

import gin
import pytest
import tensorflow as tf

from official_electra import finetune
from official_electra.data import squad
from official_electra.finetuning import squad_family
from official_electra.finetuning import trainer
from official_electra.modeling import finetuned_checkpoint
from official_electra.modeling import model_config
from official_electra.tokenization import wordpiece_tokenizer

_NUM_WORDS = 60
_WORDS = tuple(f"w{index}" for index in range(_NUM_WORDS))
_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_QUESTION = ("what", "is", "?")
_CATEGORIES = ("alpha", "beta")
_KEYS = _CATEGORIES + tuple(f"{category}{index}{end}"
                            for category in _CATEGORIES for index in range(4)
                            for end in "se")


@pytest.fixture(autouse=True)
def _clear_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _vocab_file(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(_SPECIAL + _WORDS + _QUESTION + _KEYS) + "\n",
                  encoding="utf-8")
  return path


def _squad_file(tmp_path, version, num_questions=96, seed=0):
  """Questions `what is <category> ?` on contexts of 28-44 words: filler
  words and, for each category, one two-word span (a start word and an end
  word of that category); the answer is the asked category's span.
  Unanswerable (2.0): the asked category's span is absent."""
  rng = random.Random(seed)
  paragraphs = []
  later_windows = 0
  for index in range(num_questions):
    impossible = version == "2.0" and index % 3 == 2
    category = rng.choice(_CATEGORIES)
    units = [[word] for word in rng.sample(_WORDS, rng.randint(24, 40))]
    spans = {}
    for other in _CATEGORIES:
      if other != category or not impossible:
        spans[other] = [f"{other}{rng.randrange(4)}s",
                        f"{other}{rng.randrange(4)}e"]
        units.insert(rng.randrange(len(units) + 1), spans[other])
    words = [word for unit in units for word in unit]
    context = " ".join(words)
    qa = {"id": f"q{index}", "question": f"what is {category} ?"}
    if impossible:
      qa.update(answers=[], is_impossible=True)
    else:
      answer = " ".join(spans[category])
      later_windows += words.index(spans[category][0]) > 20
      qa["answers"] = [{"text": answer, "answer_start": context.index(answer)}]
      if version == "2.0":
        qa["is_impossible"] = False
    paragraphs.append({"context": context, "qas": [qa]})
  assert later_windows > 10  # Answers beyond the first window are tested.
  data = {"version": "v2.0" if version == "2.0" else "1.1",
          "data": [{"title": "synthetic", "paragraphs": paragraphs}]}
  path = tmp_path / f"synthetic-v{version}.json"
  path.write_text(json.dumps(data), encoding="utf-8")
  return path


def _gin_file(tmp_path, joint_prediction, answerable_classifier, epochs,
              learning_rate=3e-3):
  path = tmp_path / "squad_tiny.gin"
  path.write_text(f"""
include 'gin/squad/recipe.gin'
glue_encoder.vocab_size = {len(_SPECIAL + _WORDS + _QUESTION + _KEYS)}
glue_encoder.embedding_size = 64
glue_encoder.hidden_size = 64
glue_encoder.num_layers = 2
glue_encoder.num_attention_heads = 4
glue_encoder.intermediate_size = 128
glue_encoder.max_position_embeddings = 32
squad_hyperparameters.learning_rate = {learning_rate}
squad_hyperparameters.layerwise_decay_rate = 1.0
squad_hyperparameters.weight_decay_rate = 0.0
squad_hyperparameters.recipe = 'paper'
squad_hyperparameters.max_seq_length = 32
squad_hyperparameters.batch_size = 16
squad_hyperparameters.num_train_epochs = {epochs}
squad_hyperparameters.save_checkpoints_steps = 100000
squad_task.doc_stride = 16
squad_task.max_query_length = 6
squad_task.beam_size = 5
squad_task.head_hidden_size = 64
squad_task.joint_prediction = {joint_prediction}
squad_task.answerable_classifier = {answerable_classifier}
""")
  return path


def _finetune(tmp_path, task, data_file, gin_file, num_seeds=1):
  finetune._parse_gin([str(gin_file)], [], task)
  return finetune.run(task, None, None, str(tmp_path / "run"),
                      str(_vocab_file(tmp_path)), True, num_seeds,
                      squad_files=(str(data_file), str(data_file), None, None))


@pytest.mark.parametrize("task, joint, classifier", [
    # The authors' module: the end given the start, and the answerability
    # classifier deciding the unanswerable questions.
    ("SQuAD-2.0", True, True),
    # BERT's and Hugging Face's head: independent start and end logits.
    ("SQuAD-1.1", False, False),
])
def test_each_head_overfits_a_hundred_questions(tmp_path, task, joint,
                                                 classifier):
  version = task.rsplit("-", 1)[1]
  data_file = _squad_file(tmp_path, version)
  # 40 epochs: since the clip sees the dense gradient's norm (a token used
  # twice counts once), the paper recipe's steps are smaller than when the
  # lookups' rows were counted apart, and 30 left SQuAD 2.0's HasAns F1 at
  # 89.3.
  results = _finetune(tmp_path, task, data_file,
                      _gin_file(tmp_path, joint, classifier, epochs=40))
  metrics = results[task]["median"]
  assert metrics["f1"] > 90.0, metrics
  if version == "2.0":
    assert metrics["HasAns_f1"] > 90.0 and metrics["NoAns_exact"] > 90.0, (
        metrics)
  run_dir = tmp_path / "run" / task / "seed_0"
  predictions = json.loads((run_dir / "predictions" /
                            "predictions.json").read_text())
  examples, _ = squad.read_squad_file(str(data_file), is_training=False)
  assert set(predictions) == {example.qas_id for example in examples}
  # The median seed's files, in the official scripts' format.
  assert (tmp_path / "run" / "submission" / "predictions.json").is_file()
  assert ((tmp_path / "run" / "submission" / "null_odds.json").is_file()
          == (version == "2.0"))


def test_the_seed_folder_records_its_head_in_one_model_config(tmp_path):
  data_file = _squad_file(tmp_path, "1.1", num_questions=40)
  _finetune(tmp_path, "SQuAD-1.1", data_file,
            _gin_file(tmp_path, True, True, epochs=1))
  run_dir = tmp_path / "run" / "SQuAD-1.1" / "seed_0"
  assert not (run_dir / "finetuned_model.json").exists()
  recorded = model_config.read_model_config(str(run_dir))
  description = recorded.finetuned
  assert description["family"] == finetuned_checkpoint.SPAN_EXTRACTION
  assert description["task"] == "SQuAD-1.1"
  assert description["head"]["joint_prediction"] is True
  assert description["head"]["beam_size"] == 5
  assert description["settings"]["doc_stride"] == 16
  assert description["max_seq_length"] == 32
  assert recorded.model.max_seq_length == 32
  assert finetuned_checkpoint.read_description(str(run_dir)) == description
  # The windows were cached beside the run, and the train checkpoints are gone.
  features = tmp_path / "run" / "SQuAD-1.1" / "features"
  assert any(name.endswith(".tfrecord") for name in os.listdir(features))
  assert not (run_dir / "train_checkpoints").exists()
  # The fine-tuned encoder can start another fine-tuning, as a classifier's.
  reader = tf.train.load_checkpoint(str(run_dir / "checkpoint" / "classifier"))
  assert any(name.startswith("classifier/encoder/")
             for name in reader.get_variable_to_shape_map())


def test_each_file_is_parsed_and_read_once_per_run(tmp_path):
  (tmp_path / "train").mkdir()
  (tmp_path / "predict").mkdir()
  train_file = _squad_file(tmp_path / "train", "1.1", num_questions=40)
  predict_file = _squad_file(tmp_path / "predict", "1.1", num_questions=20,
                             seed=1)
  family = squad_family.SquadFamily(
      "SQuAD-1.1", str(train_file), str(predict_file),
      squad_family.SquadSettings(doc_stride=16, max_query_length=6),
      str(tmp_path / "features"), predict_articles=[0])
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(_vocab_file(tmp_path),
                                                     lower_case=True)
  hyperparameters = trainer.FinetuneHyperparameters(max_seq_length=32,
                                                    batch_size=16)
  with mock.patch.object(squad, "_parse_json",
                         wraps=squad._parse_json) as parse, \
       mock.patch.object(squad, "read_squad_json",
                         wraps=squad.read_squad_json) as read_questions:
    family.check_files()
    encoded = family.encode(tokenizer, hyperparameters, with_test=False)
  assert sorted(call.args[1] for call in parse.call_args_list) == [
      str(predict_file), str(train_file)]
  # The questions too: the check's reading is the features'.
  assert sorted(call.args[1] for call in read_questions.call_args_list) == [
      str(predict_file), str(train_file)]
  assert len(encoded.examples) == 20
  assert sum(len(paragraph["qas"]) for article in encoded.gold
             for paragraph in article["paragraphs"]) == 20


@pytest.mark.parametrize("flags, message", [
    ((None, "x.json"), "needs --train_file"),
    (("missing.json", "missing.json"), "missing.json: no such file"),
])
def test_squad_flag_errors_are_one_line(tmp_path, flags, message):
  finetune._parse_gin([str(_gin_file(tmp_path, True, True, 1))], [],
                      "SQuAD-1.1")
  with pytest.raises(squad.SquadDataError, match=message):
    finetune.run("SQuAD-1.1", None, None, str(tmp_path / "run"),
                 str(_vocab_file(tmp_path)), True, 1,
                 squad_files=(*flags, None, None))
  assert not (tmp_path / "run").exists()


def _corrupt(data_file, change):
  data = json.loads(data_file.read_text())
  change(data["data"][0]["paragraphs"][3])
  data_file.write_text(json.dumps(data))


def _shift_answer_start(paragraph):
  paragraph["qas"][0]["answers"][0]["answer_start"] += 1


def _empty_question(paragraph):
  paragraph["qas"][0]["question"] = "  "


@pytest.mark.parametrize("change, message", [
    (lambda path: path.write_text('{"data": [}'), "not JSON|malformed|JSON"),
    (lambda path: _corrupt(path, _shift_answer_start), "answer_start"),
    (lambda path: _corrupt(path, _empty_question), "empty question|question is empty"),
    (lambda path: path.write_text(path.read_text().replace(
        '"version": "1.1"', '"version": "v2.0"')),
     "SQuAD 2.0 file, but the task is SQuAD-1.1"),
])
def test_a_bad_squad_file_is_one_line_and_nothing_is_written(tmp_path, change,
                                                             message):
  data_file = _squad_file(tmp_path, "1.1", num_questions=40)
  change(data_file)
  finetune._parse_gin([str(_gin_file(tmp_path, True, True, 1))], [],
                      "SQuAD-1.1")
  with pytest.raises(squad.SquadDataError, match=message) as raised:
    finetune.run("SQuAD-1.1", None, None, str(tmp_path / "run"),
                 str(_vocab_file(tmp_path)), True, 1,
                 squad_files=(str(data_file), str(data_file), None, None))
  assert len(str(raised.value).splitlines()) == 1
  assert str(data_file) in str(raised.value)
  assert not (tmp_path / "run").exists()


def test_a_context_no_window_can_hold_is_one_line(tmp_path):
  data_file = _squad_file(tmp_path, "1.1", num_questions=40)
  _corrupt(data_file, lambda paragraph: paragraph["qas"][0].update(
      question="what is " * 15 + "alpha ?"))
  finetune._parse_gin([str(_gin_file(tmp_path, True, True, 1))],
                      ["squad_task.max_query_length = 40"], "SQuAD-1.1")
  with pytest.raises(squad.SquadDataError,
                     match="max_seq_length|max_query_length") as raised:
    finetune.run("SQuAD-1.1", None, None, str(tmp_path / "run"),
                 str(_vocab_file(tmp_path)), True, 1,
                 squad_files=(str(data_file), str(data_file), None, None))
  assert len(str(raised.value).splitlines()) == 1
  features = tmp_path / "run" / "SQuAD-1.1" / "features"
  assert not features.exists() or not os.listdir(features)


@pytest.mark.parametrize("binding, named", [
    ("squad_task.doc_stride = 0", "squad_task.doc_stride"),
    ("squad_task.joint_prediction = 'yes'", "squad_task.joint_prediction"),
    ("squad_hyperparameters.max_seq_length = -1",
     "squad_hyperparameters.max_seq_length"),
])
def test_a_bad_squad_setting_names_its_binding(tmp_path, binding, named):
  data_file = _squad_file(tmp_path, "1.1", num_questions=40)
  finetune._parse_gin([str(_gin_file(tmp_path, True, True, 1))], [binding],
                      "SQuAD-1.1")
  with pytest.raises(finetune.GinConfigError, match=named):
    finetune.run("SQuAD-1.1", None, None, str(tmp_path / "run"),
                 str(_vocab_file(tmp_path)), True, 1,
                 squad_files=(str(data_file), str(data_file), None, None))
  assert not (tmp_path / "run").exists()
