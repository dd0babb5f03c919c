"""SQuAD 1.1 and 2.0 span extraction, as a task family of the seed loop.

What the authors' code does (ELECTRA_REFERENCE_SQUAD.md): `[CLS] question
[SEP] context-window [SEP]` windows (`data/squad_windows.py`), the
joint-prediction head with the answerability classifier (`layers/span_heads.py`,
`models/electra_span_labeler.py`), 2 epochs, sequence length 512, n-best
post-processing (`squad_postprocessing.py`) and the official scripts'
metrics (`squad_metrics.py`; for 2.0 at the original's null threshold
-2.75 on the null odds, and the oracle `best_*` of the threshold sweep).
A seed's predictions (`predictions.json`, and for 2.0 `null_odds.json`) go
to `<run_dir>/predictions/`, in the official scripts' format.
"""

import dataclasses
import os
from typing import Optional, Sequence

from absl import logging
import numpy as np
import tensorflow as tf

from official_electra.data import squad
from official_electra.data import squad_cache
from official_electra.data import squad_windows
from official_electra.finetuning import squad_metrics
from official_electra.finetuning import squad_postprocessing
from official_electra.finetuning import task_family
from official_electra.modeling import span_labeler_checkpoint
from official_electra.modeling.models import electra_span_labeler

# The task names (version each) and settings a SQuAD seed folder records.
TASK_NAMES = span_labeler_checkpoint.TASK_NAMES
SquadSettings = span_labeler_checkpoint.SquadSettings
PREDICTIONS_FILE = "predictions.json"
NULL_ODDS_FILE = "null_odds.json"
_INPUT_KEYS = ("input_word_ids", "input_mask", "input_type_ids")
_LABEL_KEYS = ("start_positions", "end_positions", "is_impossible")


@dataclasses.dataclass
class EncodedSquad(task_family.EncodedTask):
  """Training windows as arrays, and the predict file's questions.

  Attributes:
    examples: the predict file's questions (`squad.SquadExample`).
    windows: their windows (`squad_windows.SquadWindow`).
    features: the windows' model inputs, int32 `[n, max_seq_length]`.
    gold: the predict file's `data` list (the selected articles, the
      selected questions), what the official scripts score against.
    lower_case: whether the tokenizer is uncased (post-processing
      re-tokenises the original text the same way).
    latest: the latest `squad_postprocessing.SquadPredictions`.
  """
  examples: Sequence = ()
  windows: Sequence = ()
  features: dict = dataclasses.field(default_factory=dict)
  gold: list = dataclasses.field(default_factory=list)
  lower_case: bool = True
  latest: Optional[squad_postprocessing.SquadPredictions] = None


def _gold_data(squad_file, article_indices, question_ids):
  """The file's articles (those selected), each keeping only the questions
  in `question_ids`: the data the official scripts score."""
  articles = squad_file.data["data"]
  if article_indices is not None:
    articles = [articles[index] for index in article_indices]
  gold = []
  for article in articles:
    paragraphs = []
    for paragraph in article["paragraphs"]:
      questions = [qa for qa in paragraph["qas"] if qa["id"] in question_ids]
      if questions:
        paragraphs.append(dict(paragraph, qas=questions))
    if paragraphs:
      gold.append(dict(article, paragraphs=paragraphs))
  return gold


class SquadFamily(task_family.TaskFamily):
  """SQuAD 1.1 or 2.0 from a training and a predict file.

  Args:
    task_name: `SQuAD-1.1` or `SQuAD-2.0`.
    train_file: the training JSON (SQuAD's `train-v1.1.json`, ...).
    predict_file: the JSON scored after each epoch (`dev-v1.1.json`, ...).
    settings: `SquadSettings`.
    cache_dir: where the windows are cached
      (`squad_cache.load_or_build_features`).
    train_articles, predict_articles: indices of the articles of each file
      to use (None: all), e.g. to train and evaluate on two parts of one
      file.
  """

  num_train_epochs = 2

  def __init__(self, task_name: str, train_file: str, predict_file: str,
               settings: SquadSettings, cache_dir: str,
               train_articles: Optional[Sequence[int]] = None,
               predict_articles: Optional[Sequence[int]] = None):
    if task_name not in TASK_NAMES:
      raise squad.SquadDataError(
          f"unknown SQuAD task {task_name!r}; valid: {', '.join(TASK_NAMES)}")
    self.name = task_name
    self.version = TASK_NAMES[task_name]
    if (self.version == "2.0" and settings.joint_prediction and
        not settings.answerable_classifier):
      raise squad.SquadDataError(
          f"{task_name}: the joint-prediction head needs the answerability "
          "classifier to score no-answer; bind squad_task.answerable_classifier"
          " = True or squad_task.joint_prediction = False")
    self.train_file = train_file
    self.predict_file = predict_file
    self.settings = settings
    self.cache_dir = cache_dir
    self.train_articles = train_articles
    self.predict_articles = predict_articles
    self.score_key = "f1"
    self.submission_files = ((PREDICTIONS_FILE,) if self.version == "1.1"
                             else (PREDICTIONS_FILE, NULL_ODDS_FILE))
    # `squad.SquadFile`s by path: each file is parsed once per run.
    self._parsed_files = {}

  def _squad_file(self, path):
    if path not in self._parsed_files:
      self._parsed_files[path] = squad.load_squad_file(path)
    return self._parsed_files[path]

  def check_files(self) -> None:
    """Reads both files (and the selected articles), so that a bad file
    fails before anything is written; `encode` reuses what it read.

    Raises:
      squad.SquadDataError: one line naming the file and the fix.
    """
    for path, is_training, articles in (
        (self.train_file, True, self.train_articles),
        (self.predict_file, False, self.predict_articles)):
      _, version = self._squad_file(path).questions(is_training, None,
                                                    articles)
      if version != self.version:
        other = next(name for name, value in TASK_NAMES.items()
                     if value == version)
        raise squad.SquadDataError(
            f"{path}: a SQuAD {version} file, but the task is {self.name}; "
            f"pass --task={other} or a SQuAD {self.version} file")

  def _features(self, squad_file, tokenizer, hyperparameters, is_training,
                articles, max_examples=None):
    examples, windows, version = squad_cache.load_or_build_features(
        squad_file, tokenizer, max_seq_length=hyperparameters.max_seq_length,
        doc_stride=self.settings.doc_stride,
        max_query_length=self.settings.max_query_length,
        is_training=is_training, cache_dir=self.cache_dir,
        version=self.version, articles=articles, max_examples=max_examples)
    del version  # The task's, checked by the reader.
    return examples, windows

  def encode(self, tokenizer, hyperparameters, with_test):
    del with_test  # SQuAD's test sets are hidden: the predict file is scored.
    train_file = self._squad_file(self.train_file)
    predict_file = self._squad_file(self.predict_file)
    # The windows and the gold data below are all the run keeps of the files.
    self._parsed_files.clear()
    train_examples, train_windows = self._features(
        train_file, tokenizer, hyperparameters, True,
        self.train_articles, hyperparameters.max_train_examples)
    if len(train_windows) < hyperparameters.batch_size:
      raise squad.SquadDataError(
          f"{self.train_file}: {len(train_windows)} training windows make no "
          f"batch of {hyperparameters.batch_size}; select more articles or "
          "lower the batch size")
    examples, windows = self._features(
        predict_file, tokenizer, hyperparameters, False,
        self.predict_articles)
    arrays = squad_windows.stack_windows(train_windows)
    predict_arrays = squad_windows.stack_windows(windows)
    logging.info("%s: %d training questions in %d windows; %d questions in "
                 "%d windows to predict", self.name, len(train_examples),
                 len(train_windows), len(examples), len(windows))
    return EncodedSquad(
        train_features={key: arrays[key] for key in _INPUT_KEYS},
        train_labels={key: arrays[key] for key in _LABEL_KEYS},
        examples=examples, windows=windows,
        features={key: predict_arrays[key] for key in _INPUT_KEYS},
        gold=_gold_data(predict_file, self.predict_articles,
                        {example.qas_id for example in examples}),
        lower_case=tokenizer.lower_case)

  def build_model(self, encoder, hyperparameters):
    model = electra_span_labeler.ElectraSpanLabeler(
        encoder, self.settings.head_config(),
        gradient_clip_norm=hyperparameters.gradient_clip_norm,
        loss_reduction=hyperparameters.loss_reduction)
    dummy = {key: tf.zeros([1, 4], tf.int32) for key in _INPUT_KEYS}
    model(dummy, training=False)
    model(dict(dummy, start_positions=tf.zeros([1], tf.int32)), training=True)
    return model

  def compile_model(self, model, optimizer, hyperparameters):
    del hyperparameters  # The model computes its own loss.
    model.compile(optimizer=optimizer)

  def predict(self, model, encoded, hyperparameters):
    """The post-processed predictions of the predict file's questions."""
    # Untrimmed batches: the per-position outputs of every batch have the
    # same length, so Keras can concatenate them.
    dataset = tf.data.Dataset.from_tensor_slices(encoded.features).batch(
        hyperparameters.eval_batch_size).prefetch(tf.data.AUTOTUNE)
    outputs = model.predict(dataset, verbose=0)
    return squad_postprocessing.postprocess(
        encoded.examples, encoded.windows,
        {key: np.asarray(value) for key, value in outputs.items()},
        joint_prediction=self.settings.joint_prediction,
        version=self.version, n_best_size=self.settings.n_best_size,
        max_answer_length=self.settings.max_answer_length,
        lower_case=encoded.lower_case)

  def evaluate(self, model, encoded, hyperparameters):
    encoded.latest = self.predict(model, encoded, hyperparameters)
    if self.version == "1.1":
      return squad_metrics.evaluate_v1(encoded.gold,
                                       encoded.latest.predictions)
    return squad_metrics.evaluate_v2(
        encoded.gold, encoded.latest.predictions,
        na_probs=encoded.latest.null_odds,
        na_prob_thresh=self.settings.null_threshold)

  def write_predictions(self, model, encoded, hyperparameters, run_dir):
    if encoded.latest is None:
      encoded.latest = self.predict(model, encoded, hyperparameters)
    squad_postprocessing.write_prediction_files(
        encoded.latest, os.path.join(run_dir, "predictions"))

  def describe(self, model, hyperparameters):
    del model, hyperparameters
    return span_labeler_checkpoint.describe(self.name, self.settings)
