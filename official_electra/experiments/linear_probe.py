"""Linear probes of frozen encoders: what an encoder knows about a task before
fine-tuning changes it.

Fine-tuning measures a mix of what pretraining learned and how well the
weights train from there in a few hundred steps. A probe measures the first
alone: the encoder stays frozen, and a linear model is fitted on its features
of the training examples and scored on the dev set with the task's official
metric. Two features per example:

- `first_token`: the final hidden state at `[CLS]`, what the classifier reads;
- `mean`: the mean of the final hidden states over the real tokens.

The linear model is L2-regularised softmax regression (ridge regression for
STS-B) on standardised features, solved in NumPy by Newton's method, so a
probe has no randomness and no learning rate to tune.
"""

from typing import Dict

import numpy as np
import tensorflow as tf

from official_electra.finetuning import inputs

FEATURES = ("first_token", "mean")
_BATCH_SIZE = 256
_NEWTON_STEPS = 25


def encoder_features(encoder, features: dict) -> Dict[str, np.ndarray]:
  """`{feature: [num_examples, hidden]}` of a frozen encoder (no dropout)."""
  first_token, mean = [], []
  num_examples = len(features["input_word_ids"])
  for start in range(0, num_examples, _BATCH_SIZE):
    batch = {key: tf.constant(values[start:start + _BATCH_SIZE])
             for key, values in features.items()}
    hidden = encoder(batch, training=False)["sequence_output"].numpy()
    mask = batch["input_mask"].numpy()[..., None].astype(np.float64)
    first_token.append(hidden[:, 0])
    mean.append((hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1))
  return {"first_token": np.concatenate(first_token),
          "mean": np.concatenate(mean)}


class LinearProbe:
  """Standardise, then softmax (or ridge) regression with an L2 penalty.

  Args:
    num_classes: the task's labels; None for regression.
    l2: penalty on the weights (not the bias), per training example.
  """

  def __init__(self, num_classes, l2=1e-2):
    self.num_classes = num_classes
    self.l2 = l2

  def _design(self, x):
    x = (np.asarray(x, np.float64) - self._mean) / self._scale
    return np.concatenate([x, np.ones([len(x), 1])], axis=1)

  def fit(self, x, y):
    x = np.asarray(x, np.float64)
    self._mean = x.mean(axis=0)
    self._scale = np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
    design = self._design(x)
    n, d = design.shape
    penalty = np.full(d, self.l2 * n)
    penalty[-1] = 0.0
    if self.num_classes is None:
      self._weights = np.linalg.solve(
          design.T @ design + np.diag(penalty), design.T @ np.asarray(y, np.float64))
      return self
    k = self.num_classes
    targets = np.eye(k)[np.asarray(y)]
    weights = np.zeros([d, k])
    regulariser = np.kron(np.eye(k), np.diag(penalty))
    for _ in range(_NEWTON_STEPS):
      probabilities = _softmax(design @ weights)
      gradient = design.T @ (probabilities - targets) + penalty[:, None] * weights
      # Hessian of the mean-free softmax loss, blocks (class a, class b).
      hessian = np.zeros([k * d, k * d])
      for a in range(k):
        for b in range(a, k):
          weight = probabilities[:, a] * ((a == b) - probabilities[:, b])
          block = (design * weight[:, None]).T @ design
          hessian[a * d:(a + 1) * d, b * d:(b + 1) * d] = block
          hessian[b * d:(b + 1) * d, a * d:(a + 1) * d] = block.T
      step = np.linalg.lstsq(hessian + regulariser,
                             gradient.T.reshape(-1), rcond=None)[0]
      weights -= step.reshape(k, d).T
      if np.max(np.abs(step)) < 1e-8:
        break
    self._weights = weights
    return self

  def predict(self, x):
    scores = self._design(x) @ self._weights
    return scores if self.num_classes is None else np.argmax(scores, axis=1)


def _softmax(logits):
  logits = logits - logits.max(axis=1, keepdims=True)
  exponentials = np.exp(logits)
  return exponentials / exponentials.sum(axis=1, keepdims=True)


def probe_task(encoder, encoded) -> Dict[str, Dict[str, float]]:
  """Probes one task; returns `{feature: dev metrics of the first dev split}`.

  Args:
    encoder: a built `ElectraEncoder` (restored or freshly initialised).
    encoded: the task's `glue_family.EncodedGlueTask`.
  """
  task = encoded.task
  split = task.dev_splits[0]
  dev_features, dev_labels = encoded.dev_sets[split]
  train = encoder_features(encoder, encoded.train_features)
  dev = encoder_features(encoder, dev_features)
  num_classes = None if task.is_regression else task.num_outputs
  results = {}
  for feature in FEATURES:
    probe = LinearProbe(num_classes).fit(train[feature], encoded.train_labels)
    results[feature] = task.compute_metrics(split, dev_labels,
                                            probe.predict(dev[feature]))
  return results


SELECTION_EXAMPLES = 4000
_SELECTION_SEED = 1


def probe_training_split(encoder, task, train_examples, tokenizer,
                         max_seq_length, num_examples=SELECTION_EXAMPLES,
                         seed=_SELECTION_SEED) -> Dict[str, Dict[str, float]]:
  """A probe that never reads a dev set: fitted on one half of a sample of
  the training examples, scored on the other half.

  It scores pretraining candidates on the same inputs without the dev set
  (choosing a pretraining learning rate, say), so the dev set stays for the
  comparison itself. Pairs are not swapped (a swapped copy of a held-out
  pair would otherwise sit in the fitted half).

  Args:
    encoder: a built `ElectraEncoder`.
    task: the `tasks.GlueTask`.
    train_examples: the task's training `glue.GlueExample`s.
    tokenizer: the encoder's `WordpieceTokenizer`.
    max_seq_length: tokens per example.
    num_examples: the sample's size (all examples when there are fewer).
    seed: the sample's shuffle.

  Returns:
    `{feature: metrics of the held-out half}`, keyed as dev metrics are.
  """
  order = np.random.default_rng(seed).permutation(len(train_examples))
  sample = [train_examples[i] for i in order[:num_examples]]
  fitted, held_out = sample[:len(sample) // 2], sample[len(sample) // 2:]
  features = [encoder_features(encoder, inputs.encode_examples(
      part, tokenizer, max_seq_length)) for part in (fitted, held_out)]
  labels = [task.encode_labels(part) for part in (fitted, held_out)]
  num_classes = None if task.is_regression else task.num_outputs
  results = {}
  for feature in FEATURES:
    probe = LinearProbe(num_classes).fit(features[0][feature], labels[0])
    results[feature] = task.compute_metrics(
        task.dev_splits[0], labels[1], probe.predict(features[1][feature]))
  return results
