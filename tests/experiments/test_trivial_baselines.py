"""Trivial baselines: each against its definition on a small made-up GLUE
folder, the logistic regression against scikit-learn's, and the figures on
the real dev sets when ../shared is there."""

import json
import subprocess
import sys

import numpy as np
import pytest
from sklearn import linear_model

from official_electra.experiments import trivial_baselines
from official_electra.finetuning import metrics
from official_electra.finetuning import tasks
from tests.training import tiny_pretraining

_POSITIVE = ("good", "great", "fine", "superb")
_NEGATIVE = ("bad", "awful", "dull", "poor")
_FILLER = ("the", "film", "plot", "was", "quite", "really", "a", "story")


def _sentences(rng, count):
  """Short sentences whose label (1: positive) their sentiment words decide,
  with a tenth of the labels flipped."""
  texts, labels = [], []
  for _ in range(count):
    label = int(rng.integers(2))
    words = list(rng.choice(_FILLER, 4)) + [
        str(rng.choice(_POSITIVE if label else _NEGATIVE))]
    rng.shuffle(words)
    texts.append(" ".join(words))
    labels.append(label if rng.random() > 0.1 else 1 - label)
  return texts, labels


def _glue_folder(root):
  """A GLUE folder of the four study tasks, small and made up."""
  rng = np.random.default_rng(0)
  for split, count in (("train", 120), ("dev", 40)):
    texts, labels = _sentences(rng, count)
    (root / "SST-2").mkdir(parents=True, exist_ok=True)
    (root / "SST-2" / f"{split}.tsv").write_text(
        "sentence\tlabel\n" + "".join(f"{text}\t{label}\n"
                                      for text, label in zip(texts, labels)))
    (root / "CoLA").mkdir(exist_ok=True)
    # CoLA: mostly acceptable (label 1), no header.
    (root / "CoLA" / f"{split}.tsv").write_text("".join(
        f"src\t{int(index % 4 != 0)}\t\t{text}\n"
        for index, text in enumerate(texts)))
    # MRPC: a paraphrase shares most words; mostly paraphrases.
    rows = []
    for index, text in enumerate(texts):
      paraphrase = index % 3 != 0
      other = text if paraphrase else " ".join(rng.choice(_FILLER, 5))
      rows.append(f"{int(paraphrase)}\t{index}\t{index + 1}\t{text}\t{other}")
    (root / "MRPC").mkdir(exist_ok=True)
    (root / "MRPC" / f"{split}.tsv").write_text(
        "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n" + "\n".join(rows)
        + "\n")
    # STS-B: the score is 5 times the words' overlap.
    rows = []
    for index, text in enumerate(texts):
      other = " ".join(text.split()[:1 + index % 5] + ["zebra"])
      score = 5 * trivial_baselines.jaccard(text, other)
      rows.append("\t".join([str(index), "g", "f", "y", "o", "s1", "s2",
                             text, other, f"{score:.3f}"]))
    (root / "STS-B").mkdir(exist_ok=True)
    (root / "STS-B" / f"{split}.tsv").write_text(
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
        "sentence1\tsentence2\tscore\n" + "\n".join(rows) + "\n")
  return root


def test_words_and_their_jaccard_overlap():
  assert trivial_baselines.words("The film's plot, THE end.") == [
      "the", "film", "s", "plot", "the", "end"]
  assert trivial_baselines.jaccard("a b c", "b c d") == 0.5
  assert trivial_baselines.jaccard("A a", "a") == 1.0
  assert trivial_baselines.jaccard("", "") == 0.0


def test_the_threshold_is_the_best_on_the_examples_given():
  similarities = [0.1, 0.2, 0.4, 0.5, 0.9]
  assert trivial_baselines.best_threshold(similarities, [0, 0, 1, 1, 1]) == 0.4
  assert trivial_baselines.best_threshold(similarities, [0, 0, 0, 0, 0]) == (
      np.inf)
  # A draw keeps the smallest threshold.
  assert trivial_baselines.best_threshold([0.3, 0.6], [1, 1]) == 0.3


def test_logistic_regression_is_scikit_learns():
  rng = np.random.default_rng(1)
  texts, labels = _sentences(rng, 150)
  featurizer = trivial_baselines.WordFeatures(texts)
  features = featurizer.transform(texts)
  num_columns = len(featurizer.columns)
  weights, bias = trivial_baselines.fit_logistic_regression(
      features, labels, num_columns)
  dense = np.zeros((len(texts), num_columns))
  dense[features[0], features[1]] = 1.0
  reference = linear_model.LogisticRegression(
      C=1.0, tol=1e-12, max_iter=10000).fit(dense, labels)
  np.testing.assert_allclose(weights, reference.coef_[0], atol=1e-6)
  assert bias == pytest.approx(reference.intercept_[0], abs=1e-6)
  # A stronger penalty is scikit-learn's smaller C.
  weights, bias = trivial_baselines.fit_logistic_regression(
      features, labels, num_columns, l2_penalty=4.0)
  reference = linear_model.LogisticRegression(
      C=0.25, tol=1e-12, max_iter=10000).fit(dense, labels)
  np.testing.assert_allclose(weights, reference.coef_[0], atol=1e-6)
  # Words the training texts never had are dropped.
  assert featurizer.transform(["zebra good"])[1].tolist() == [
      featurizer.columns["good"]]


def test_each_task_gets_the_baselines_that_apply(tmp_path):
  glue_dir = _glue_folder(tmp_path / "glue")
  baselines = trivial_baselines.task_baselines(
      str(glue_dir), ["MRPC", "STS-B", "CoLA", "SST-2"])
  assert {task: list(names) for task, names in baselines.items()} == {
      "MRPC": [trivial_baselines.MAJORITY, trivial_baselines.WORD_OVERLAP],
      "STS-B": [trivial_baselines.WORD_OVERLAP],
      "CoLA": [trivial_baselines.MAJORITY, trivial_baselines.BAG_OF_WORDS],
      "SST-2": [trivial_baselines.MAJORITY, trivial_baselines.BAG_OF_WORDS]}
  # Majority: CoLA's is "acceptable" (3 in 4), so its MCC is 0.
  cola = baselines["CoLA"][trivial_baselines.MAJORITY]
  assert cola["accuracy"] == pytest.approx(30 / 40)
  assert cola["matthews_corrcoef"] == 0.0 == cola["score"]
  # MRPC's majority says "paraphrase" (2 in 3): F1 of always yes.
  mrpc = baselines["MRPC"][trivial_baselines.MAJORITY]
  dev_positive = sum(index % 3 != 0 for index in range(40)) / 40
  assert mrpc["accuracy"] == pytest.approx(dev_positive) == mrpc["score"]
  assert mrpc["f1"] == pytest.approx(2 * dev_positive / (1 + dev_positive))
  # Word overlap separates the made-up paraphrases; STS-B's score is the
  # overlap itself (up to the file's 3 decimals).
  overlap = baselines["MRPC"][trivial_baselines.WORD_OVERLAP]
  assert overlap["accuracy"] > 0.95 and 0 < overlap["threshold"] <= 1
  sts = baselines["STS-B"][trivial_baselines.WORD_OVERLAP]
  assert sts["spearman"] == sts["score"] > 0.99 and sts["pearson"] > 0.99
  # The bag of words learns the sentiment words (9 in 10 labels kept).
  sst = baselines["SST-2"][trivial_baselines.BAG_OF_WORDS]
  assert sst["accuracy"] > 0.75
  assert sst["words"] == len(_FILLER + _POSITIVE + _NEGATIVE)


def test_the_scores_are_the_studys_metrics(tmp_path):
  glue_dir = _glue_folder(tmp_path / "glue")
  task = tasks.get_task("MRPC")
  train = trivial_baselines.glue.read_split(str(glue_dir), "MRPC", "train")
  dev = trivial_baselines.glue.read_split(str(glue_dir), "MRPC", "dev")
  result = trivial_baselines.word_overlap(task, train, dev)
  predictions = [int(trivial_baselines.jaccard(example.text_a, example.text_b)
                     >= result["threshold"]) for example in dev]
  labels = [int(example.label) for example in dev]
  assert result["accuracy"] == metrics.accuracy(labels, predictions)
  assert result["f1"] == metrics.f1_score(labels, predictions)


def test_the_rows_and_table_a_report_shows(tmp_path):
  glue_dir = _glue_folder(tmp_path / "glue")
  baselines = trivial_baselines.task_baselines(str(glue_dir),
                                               ["STS-B", "CoLA"])
  rows = dict(trivial_baselines.score_rows(baselines, ["STS-B", "CoLA"]))
  assert list(rows) == list(trivial_baselines.BASELINES)
  assert rows[trivial_baselines.MAJORITY] == {"STS-B": None, "CoLA": 0.0}
  assert rows[trivial_baselines.WORD_OVERLAP]["CoLA"] is None
  table = trivial_baselines.format_table(baselines, ["STS-B", "CoLA"])
  assert "| CoLA | majority class | matthews_corrcoef 0.0, accuracy 75.0 |" in (
      table)


def test_the_program_prints_and_writes_the_baselines(tmp_path):
  glue_dir = _glue_folder(tmp_path / "glue")
  output = tmp_path / "baselines.json"
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.experiments.trivial_baselines",
       f"--glue_dir={glue_dir}", "--tasks=CoLA,MRPC",
       f"--output_file={output}"], capture_output=True, text=True,
      timeout=300, cwd=tiny_pretraining.REPO_ROOT, check=False)
  assert completed.returncode == 0, completed.stderr[-2000:]
  assert "| MRPC | word overlap (Jaccard) |" in completed.stdout
  assert set(json.loads(output.read_text())) == {"CoLA", "MRPC"}
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.experiments.trivial_baselines",
       f"--glue_dir={tmp_path / 'nowhere'}", "--tasks=CoLA"],
      capture_output=True, text=True, timeout=300,
      cwd=tiny_pretraining.REPO_ROOT, check=False)
  assert completed.returncode == 1
  assert completed.stderr.strip().splitlines()[-1].startswith(
      f"error: {tmp_path / 'nowhere'}/CoLA/train.tsv: no such file")


def test_the_baselines_on_the_real_dev_sets(shared_data_dir):
  baselines = trivial_baselines.task_baselines(
      str(shared_data_dir / "glue"), ["MRPC", "STS-B", "CoLA", "SST-2"])
  mrpc = baselines["MRPC"][trivial_baselines.MAJORITY]
  assert (round(100 * mrpc["accuracy"], 1), round(100 * mrpc["f1"], 1)) == (
      68.4, 81.2)
  assert baselines["CoLA"][trivial_baselines.MAJORITY]["score"] == 0.0
  sts = baselines["STS-B"][trivial_baselines.WORD_OVERLAP]
  assert (round(100 * sts["spearman"], 1), round(100 * sts["pearson"], 1)) == (
      65.3, 65.0)
  overlap = baselines["MRPC"][trivial_baselines.WORD_OVERLAP]
  assert round(100 * overlap["accuracy"], 1) == 72.3
  sst = baselines["SST-2"][trivial_baselines.BAG_OF_WORDS]
  assert round(100 * sst["accuracy"], 1) == 82.1
  assert round(100 * baselines["CoLA"][trivial_baselines.BAG_OF_WORDS][
      "matthews_corrcoef"], 1) == 5.9
