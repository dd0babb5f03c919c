"""The linear probe: its solver against scikit-learn's, and a probe of a
tiny encoder on a made-up task."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.experiments import linear_probe
from official_electra.finetuning import glue_family
from official_electra.finetuning import tasks
from official_electra.modeling import encoder_config

sklearn_linear = pytest.importorskip("sklearn.linear_model")
sklearn_preprocessing = pytest.importorskip("sklearn.preprocessing")


def _blobs(num_classes, num_examples, dim, seed):
  rng = np.random.default_rng(seed)
  centres = rng.normal(scale=1.5, size=[num_classes, dim])
  labels = rng.integers(num_classes, size=num_examples)
  return centres[labels] + rng.normal(size=[num_examples, dim]) * 2.0, labels


@pytest.mark.parametrize("num_classes", [2, 3])
def test_softmax_probe_is_sklearns_l2_logistic_regression(num_classes):
  x, y = _blobs(num_classes, 600, 8, seed=num_classes)
  test_x, _ = _blobs(num_classes, 400, 8, seed=10 + num_classes)
  l2 = 1e-2
  ours = linear_probe.LinearProbe(num_classes, l2=l2).fit(x, y)
  # Same objective: sum of losses + (l2 * n / 2) |W|^2 on standardised
  # features, bias not penalised <=> sklearn's C = 1 / (l2 * n).
  scaler = sklearn_preprocessing.StandardScaler().fit(x)
  theirs = sklearn_linear.LogisticRegression(
      C=1.0 / (l2 * len(x)), tol=1e-10, max_iter=10000).fit(
          scaler.transform(x), y)
  agreement = np.mean(ours.predict(test_x) ==
                      theirs.predict(scaler.transform(test_x)))
  assert agreement >= 0.995
  assert np.mean(ours.predict(x) == y) > 0.6  # the data is learnable


def test_regression_probe_is_ridge_on_standardised_features():
  rng = np.random.default_rng(0)
  x = rng.normal(size=[200, 5]) * [1, 2, 3, 4, 5] + 7
  y = x @ [0.5, -1, 0, 2, 1] + rng.normal(size=200)
  l2 = 0.1
  ours = linear_probe.LinearProbe(None, l2=l2).fit(x, y)
  scaler = sklearn_preprocessing.StandardScaler().fit(x)
  theirs = sklearn_linear.Ridge(alpha=l2 * len(x)).fit(scaler.transform(x), y)
  np.testing.assert_allclose(ours.predict(x),
                             theirs.predict(scaler.transform(x)), atol=1e-8)


def test_probe_task_scores_both_features_on_the_dev_set():
  tf_keras.utils.set_random_seed(0)
  config = encoder_config.EncoderConfig(
      vocab_size=30, embedding_size=32, hidden_size=32, num_layers=1,
      num_attention_heads=1, intermediate_size=64, max_position_embeddings=8)
  network = encoder_config.build_encoder(config)
  rng = np.random.default_rng(0)

  def split(size):
    ids = rng.integers(5, 30, size=[size, 8]).astype(np.int32)
    labels = (ids[:, 0] < 17).astype(np.int32)  # the first token's identity
    features = {"input_word_ids": ids,
                "input_mask": np.ones_like(ids),
                "input_type_ids": np.zeros_like(ids)}
    return features, labels

  train_features, train_labels = split(300)
  encoded = glue_family.EncodedGlueTask(
      task=tasks.get_task("SST-2"), train_features=train_features,
      train_labels=train_labels, dev_sets={"dev": split(200)}, test_sets={})
  results = linear_probe.probe_task(network, encoded)
  assert set(results) == set(linear_probe.FEATURES)
  for metrics in results.values():
    assert set(metrics) == {"accuracy"}
  # A random 1-layer encoder's state at a position still carries its token;
  # the mean over 8 positions holds less of it.
  assert results["first_token"]["accuracy"] > 0.9, results
  assert results["mean"]["accuracy"] > 0.55, results
  features = linear_probe.encoder_features(network, train_features)
  expected_first = network(
      {key: tf.constant(value) for key, value in train_features.items()},
      training=False)["sequence_output"].numpy()[:, 0]
  np.testing.assert_allclose(features["first_token"], expected_first,
                             rtol=1e-5, atol=1e-6)


def test_selection_probe_fits_one_half_of_the_training_sample_scores_the_other(
    tmp_path, monkeypatch):
  from official_electra.data import glue  # pylint: disable=g-import-not-at-top
  from official_electra.tokenization import wordpiece_tokenizer  # pylint: disable=g-import-not-at-top
  words = ["good", "bad", "film", "the", "is", "very", "plot", "dull"]
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                             + words) + "\n")
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(str(vocab),
                                                     lower_case=True)
  rng = np.random.default_rng(3)
  examples = []
  for index in range(120):
    label = int(rng.integers(2))
    sentence = (f"{'good' if label else 'bad'} " +
                " ".join(rng.choice(words[2:], size=3)))
    examples.append(glue.GlueExample(f"train-{index}", sentence, None,
                                     str(label)))
  fitted_rows, scored_rows = [], []
  original_fit = linear_probe.LinearProbe.fit
  original_predict = linear_probe.LinearProbe.predict

  def fit(self, x, y):
    fitted_rows.append(len(x))
    return original_fit(self, x, y)

  def predict(self, x):
    scored_rows.append(len(x))
    return original_predict(self, x)

  monkeypatch.setattr(linear_probe.LinearProbe, "fit", fit)
  monkeypatch.setattr(linear_probe.LinearProbe, "predict", predict)
  tf_keras.utils.set_random_seed(0)
  network = encoder_config.build_encoder(encoder_config.EncoderConfig(
      vocab_size=5 + len(words), embedding_size=16, hidden_size=16,
      num_layers=1, num_attention_heads=1, intermediate_size=32,
      max_position_embeddings=16))
  results = linear_probe.probe_training_split(
      network, tasks.get_task("SST-2"), examples, tokenizer, 16,
      num_examples=100)
  # A sample of 100 of the 120: 50 fitted, the other 50 scored, per feature.
  assert fitted_rows == [50, 50] and scored_rows == [50, 50]
  assert set(results) == set(linear_probe.FEATURES)
  # The label is the first word after [CLS]: learnable from its state.
  assert results["first_token"]["accuracy"] > 0.5
  assert max(metrics["accuracy"] for metrics in results.values()) > 0.9
