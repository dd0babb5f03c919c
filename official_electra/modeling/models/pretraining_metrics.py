"""The metrics the original ELECTRA logs, as Keras metrics."""

import tensorflow as tf
import tf_keras

from official_electra.modeling.models import pretraining_losses


class PretrainingMetrics:
  """Creates, updates and reports the pretraining metrics.

  Names follow the original's evaluation metrics: `masked_lm_loss`,
  `masked_lm_accuracy`, `sampled_masked_lm_accuracy` (how often the
  generator's sample equals the original), and `disc_loss`, `disc_accuracy`,
  `disc_precision`, `disc_recall`, `disc_auc`; `main_mlm_loss` and
  `main_mlm_accuracy` for the Replace/All-Tokens MLM ablations;
  `adversarial_reward` (the mean REINFORCE reward of the generator's samples)
  and `baseline_loss` for Adversarial ELECTRA; `loss` is the weighted total. Losses are token-weighted means, so they aggregate correctly
  over replicas and steps.

  Args:
    has_generator: Whether generator logits exist (all but uniform sampling).
    has_sampling: Whether replacements are sampled (all but `mlm`).
    has_discriminator: Whether the objective has a replaced-token detector.
    has_main_mlm: Whether the main network is trained as an MLM on sampled
      inputs (Replace MLM, All-Tokens MLM).
    has_reinforce: Whether the generator is trained by REINFORCE
      (Adversarial ELECTRA).
  A step whose outputs lack a group (Two-Stage's generator stage has no
  samples and no discriminator) leaves that group's metrics untouched.
  """

  def __init__(self, has_generator, has_sampling, has_discriminator,
               has_main_mlm, has_reinforce=False):
    self.loss = tf_keras.metrics.Mean(name="loss")
    self.generator = None
    self.discriminator = None
    self.main_mlm = None
    if has_generator:
      self.generator = {
          "loss": tf_keras.metrics.Mean(name="masked_lm_loss"),
          "accuracy": tf_keras.metrics.SparseCategoricalAccuracy(
              name="masked_lm_accuracy"),
      }
    self.sampled_accuracy = None
    if has_sampling:
      self.sampled_accuracy = tf_keras.metrics.Mean(
          name="sampled_masked_lm_accuracy")
    if has_discriminator:
      self.discriminator = {
          "loss": tf_keras.metrics.Mean(name="disc_loss"),
          "accuracy": tf_keras.metrics.BinaryAccuracy(name="disc_accuracy"),
          "precision": tf_keras.metrics.Precision(name="disc_precision"),
          "recall": tf_keras.metrics.Recall(name="disc_recall"),
          "auc": tf_keras.metrics.AUC(name="disc_auc"),
      }
    if has_main_mlm:
      self.main_mlm = {
          "loss": tf_keras.metrics.Mean(name="main_mlm_loss"),
          "accuracy": tf_keras.metrics.SparseCategoricalAccuracy(
              name="main_mlm_accuracy"),
      }

    self.reinforce = None
    if has_reinforce:
      self.reinforce = {
          "reward": tf_keras.metrics.Mean(name="adversarial_reward"),
          "baseline_loss": tf_keras.metrics.Mean(name="baseline_loss"),
      }

  @property
  def all_metrics(self):
    return self._metrics(discriminator=True)

  def _metrics(self, discriminator):
    metrics = [self.loss]
    groups = (self.generator, self.discriminator if discriminator else None,
              self.main_mlm, self.reinforce if discriminator else None)
    for group in groups:
      if group:
        metrics.extend(group.values())
    if self.sampled_accuracy and discriminator:
      metrics.append(self.sampled_accuracy)
    return metrics

  def update(self, inputs, outputs, losses, update_loss=True):
    """Updates every metric from one step's outputs and losses (the total
    loss too unless `update_loss` is False: see `update_loss`)."""
    if update_loss:
      self.update_loss(losses["loss"])
    masked_weights = outputs["masked_weights"]
    if self.generator:
      self.generator["loss"].update_state(
          losses["generator"][1], sample_weight=masked_weights)
      self.generator["accuracy"].update_state(
          outputs["masked_ids"], outputs["generator_logits"],
          sample_weight=masked_weights)
    if self.sampled_accuracy and "sampled_ids" in outputs:
      sampled_equals_original = tf.cast(
          tf.equal(outputs["sampled_ids"],
                   tf.cast(outputs["masked_ids"], outputs["sampled_ids"].dtype)),
          tf.float32)
      self.sampled_accuracy.update_state(
          sampled_equals_original, sample_weight=masked_weights)
    if self.discriminator and "discriminator_logits" in outputs:
      weights = outputs["discriminator_weights"]
      labels = outputs["replaced_token_labels"]
      probabilities = tf.sigmoid(outputs["discriminator_logits"])
      self.discriminator["loss"].update_state(
          losses["discriminator"][1], sample_weight=weights)
      for name in ("accuracy", "precision", "recall", "auc"):
        self.discriminator[name].update_state(
            labels, probabilities, sample_weight=weights)
    if self.main_mlm:
      weights = (outputs["input_mask"] if "copy_logits" in outputs
                 else masked_weights)
      targets = (inputs["input_word_ids"] if "copy_logits" in outputs
                 else outputs["masked_ids"])
      self.main_mlm["loss"].update_state(losses["main_mlm"][1],
                                         sample_weight=weights)
      self.main_mlm["accuracy"].update_state(
          targets, outputs["main_mlm_logits"], sample_weight=weights)

    if self.reinforce and "reinforce" in losses:
      self.reinforce["reward"].update_state(
          losses["reinforce"][1], sample_weight=masked_weights)
      self.reinforce["baseline_loss"].update_state(
          losses["baseline"][1], sample_weight=masked_weights)

  def update_loss(self, loss):
    """Records a step's total loss, this replica's share (a step of
    accumulated micro-batches passes their sum)."""
    # The total loss is a sum of per-replica shares: report the global value.
    self.loss.update_state(pretraining_losses.global_sum(loss))

  def results(self, discriminator=True):
    """The metrics' values; without the discriminator's (and the sampling
    and REINFORCE ones) when `discriminator` is False."""
    return {metric.name: metric.result()
            for metric in self._metrics(discriminator)}
