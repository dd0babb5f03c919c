"""Tests for the GLUE task definitions, inputs and output files."""

import json

import numpy as np
import pytest

from official_electra import files
from official_electra.data import glue
from official_electra.finetuning import inputs
from official_electra.finetuning import outputs
from official_electra.finetuning import tasks
from official_electra.tokenization import wordpiece_tokenizer


def test_recipe_per_task():
  assert [tasks.get_task(name).num_train_epochs
          for name in glue.GLUE_TASK_NAMES] == [3, 3, 3, 10, 3, 3, 3, 10, 3]
  assert [name for name in glue.GLUE_TASK_NAMES
          if tasks.get_task(name).train_on_swapped_pairs] == ["MRPC", "STS-B"]
  sts = tasks.get_task("STS-B")
  assert sts.is_regression and sts.num_outputs == 1
  assert sts.score_key == "spearman"
  mnli = tasks.get_task("MNLI")
  assert mnli.num_outputs == 3 and mnli.score_key == "accuracy_matched"
  assert mnli.submission_files == ("MNLI-m.tsv", "MNLI-mm.tsv")
  assert tasks.get_task("CoLA").score_key == "matthews_corrcoef"


def test_labels_round_trip_to_submission_strings():
  rte = tasks.get_task("RTE")
  examples = [glue.GlueExample("0", "a", "b", "not_entailment"),
              glue.GlueExample("1", "a", "b", "entailment")]
  label_ids = rte.encode_labels(examples)
  np.testing.assert_array_equal(label_ids, [1, 0])
  assert rte.prediction_strings(label_ids) == ["not_entailment", "entailment"]
  assert tasks.get_task("STS-B").prediction_strings(np.array([1.23456])) == [
      "1.235"]


def test_compute_metrics_keys():
  mrpc = tasks.get_task("MRPC")
  assert mrpc.compute_metrics("dev", [1, 0, 1, 1], [1, 0, 0, 1]) == {
      "f1": pytest.approx(0.8), "accuracy": 0.75}
  mnli = tasks.get_task("MNLI")
  assert set(mnli.compute_metrics("dev_mismatched", [0, 1], [0, 1])) == {
      "accuracy_mismatched"}


def test_resolve_task_names():
  assert tasks.resolve_task_names("all") == list(glue.GLUE_TASK_NAMES)
  assert tasks.resolve_task_names("RTE, MRPC") == ["RTE", "MRPC"]
  with pytest.raises(glue.GlueDataError, match=r"unknown GLUE task 'QQ'.*QQP"):
    tasks.resolve_task_names("QQ")


def test_encode_examples_and_trimmed_batches(tiny_vocab_file):
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(tiny_vocab_file,
                                                     lower_case=True)
  examples = [glue.GlueExample("0", "The movie is good .", "a cat", None),
              glue.GlueExample("1", "bad", "the dog ran .", None)]
  features = inputs.encode_examples(examples, tokenizer, max_seq_length=12)
  vocab = {token: index for index, token in enumerate(
      tiny_vocab_file.read_text().split("\n"))}
  first = ["[CLS]", "the", "movie", "is", "good", ".", "[SEP]", "a", "cat",
           "[SEP]"]
  assert features["input_word_ids"][0].tolist() == (
      [vocab[token] for token in first] + [0, 0])
  assert features["input_type_ids"][0].tolist() == [0] * 7 + [1] * 3 + [0] * 2
  assert features["input_mask"].sum(axis=1).tolist() == [10, 8]
  (batch,) = list(inputs.make_dataset(features, None, batch_size=2))
  assert batch["input_word_ids"].shape == (2, 10)
  swapped = inputs.swap_pairs(examples)
  assert (swapped[2].text_a, swapped[2].text_b) == ("a cat", "The movie is good .")


def _labels_of(dataset):
  return np.concatenate([labels.numpy() for _, labels in dataset]).tolist()


def test_training_dataset_shuffles_per_epoch_and_drops_partial_batch():
  features = {key: np.arange(10, dtype=np.int32)[:, None] * np.ones(
      [1, 4], np.int32) for key in ("input_word_ids", "input_type_ids")}
  features["input_mask"] = np.ones([10, 4], np.int32)
  labels = np.arange(10, dtype=np.int32)
  batches = list(inputs.make_training_dataset(features, labels, batch_size=4,
                                              seed=1, epoch=0))
  assert len(batches) == 2
  seen = _labels_of(batches)
  assert len(set(seen)) == 8 and seen != list(range(8))
  # The order is a function of (seed, epoch): a rerun reads the same batches,
  # another epoch another order, and a resumed epoch the remaining batches.
  assert _labels_of(inputs.make_training_dataset(
      features, labels, 4, seed=1, epoch=0)) == seen
  assert _labels_of(inputs.make_training_dataset(
      features, labels, 4, seed=1, epoch=1)) != seen
  assert _labels_of(inputs.make_training_dataset(
      features, labels, 4, seed=1, epoch=0, skip_batches=1)) == seen[4:]


def test_summarize_seeds_median_and_selected_seed(tmp_path):
  summary = outputs.summarize_seeds(
      {0: {"accuracy": 0.8, "f1": 0.7}, 1: {"accuracy": 0.9, "f1": 0.6},
       2: {"accuracy": 0.7, "f1": 0.9}}, score_key="accuracy")
  assert summary["median"] == {"accuracy": 0.8, "f1": 0.7}
  assert summary["selected_seed"] == 0
  path = str(tmp_path / "results.json")
  files.write_json(path, {"pearson": float("nan")})
  assert json.loads(open(path).read()) == {"pearson": None}


def test_write_submission(tmp_path):
  path = str(tmp_path / "RTE.tsv")
  outputs.write_submission(path, ["0", "1"], ["entailment", "not_entailment"])
  assert open(path).read() == "index\tprediction\n0\tentailment\n1\tnot_entailment\n"
