"""ELECTRA pretraining: replaced token detection and the paper's ablations."""

import numpy as np
import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import discriminator_head
from official_electra.modeling.layers import dynamic_masking
from official_electra.modeling.layers import masked_lm_head
from official_electra.modeling.layers import replaced_token_sampler
from official_electra.modeling.models import pretraining_losses
from official_electra.modeling.models import pretraining_metrics

# The log-probability of an id the unigram generator never draws.
_NEVER = -1e30
# The objectives of Clark et al. (2020): ELECTRA (Section 2), the BERT MLM
# baseline, and the Section 3.2 ablations.
OBJECTIVES = ("electra", "mlm", "electra_15", "replace_mlm", "all_tokens_mlm")
_DISCRIMINATIVE = ("electra", "electra_15")


@tf_keras.utils.register_keras_serializable(package="official_electra")
class ElectraPretrainer(tf_keras.Model):
  """Generator + discriminator, trained by a custom `train_step`.

  One step (objective `electra`): mask the batch dynamically; the generator
  predicts the original tokens at the masked slots; replacements are sampled
  from its softmax (Gumbel-max, no gradient); the discriminator labels every
  token as original or replaced. Loss = `generator_loss_weight` x MLM +
  `discriminator_loss_weight` x RTD (1.0 and 50.0 in the paper).

  Objectives (one argument, one model):
    `electra`: the above.
    `mlm`: the BERT baseline: `discriminator_network` trained as a masked LM
      (no generator; give it the discriminator's size).
    `electra_15`: ELECTRA with the discriminator loss on masked slots only.
    `replace_mlm`: masked slots hold generator samples instead of `[MASK]`;
      the main network predicts the originals there (MLM).
    `all_tokens_mlm`: as `replace_mlm`, but the main network predicts every
      token, through a copy mechanism (Section 3.2).
  For `mlm`-style objectives the main network's MLM loss has weight 1.

  Args:
    discriminator_network: The `ElectraEncoder` that is kept after pretraining.
    generator_network: The generator `ElectraEncoder`, normally on the same
      `ElectraEmbeddings` instance (tied); None for `mlm` or a uniform
      generator.
    mask_token_id: Id of `[MASK]`.
    excluded_token_ids: Ids never masked (`[CLS]`, `[SEP]`, `[PAD]`...).
    max_predictions_per_seq: Masked slots per sequence.
    mask_prob: Fraction of tokens masked (0.15; 0.25 for Large).
    objective: One of `OBJECTIVES`.
    generator_loss_weight: Weight of the generator's MLM loss.
    discriminator_loss_weight: Weight of the discriminator's RTD loss.
    temperature: Sampling temperature.
    uniform_generator: Sample replacements uniformly over the vocabulary
      instead of from a generator (the original code's ablation, which it
      calls uniform).
    unigram_counts: Sample replacements from these per-id frequencies (the
      corpus's unigram distribution; the paper's "unigram generator",
      Section 3.3 and Figure 3) instead of from a generator: a sequence of
      `vocab_size` non-negative counts. Ids in `excluded_token_ids` and ids
      counted 0 are never drawn. Not with `disallow_correct`.
    disallow_correct: Never sample the original token at a masked slot (the
      original's `disallow_correct`, off by default there too): its logit is
      lowered by 1000 before sampling (`ReplacedTokenSampler`); a uniform
      generator draws among the other tokens.
    masking_draws: How masked positions are drawn, one of
      `dynamic_masking.DRAWS` (`without_replacement`, or the original's
      `with_replacement`; see `DynamicMasking`).
    seed: Seed of the masking and sampling randomness (state is a variable,
      saved in checkpoints, so a resumed run draws the same masks).
    initializer_range: Standard deviation of the heads' initializers.
    **kwargs: `tf_keras.Model` arguments.
  """

  def __init__(self,
               discriminator_network,
               generator_network,
               mask_token_id,
               excluded_token_ids,
               max_predictions_per_seq,
               mask_prob=0.15,
               objective="electra",
               generator_loss_weight=1.0,
               discriminator_loss_weight=50.0,
               temperature=1.0,
               uniform_generator=False,
               unigram_counts=None,
               seed=None,
               initializer_range=0.02,
               disallow_correct=False,
               masking_draws="without_replacement",
               **kwargs):
    super().__init__(**kwargs)
    if objective not in OBJECTIVES:
      raise ValueError(
          f"unknown objective {objective!r}; choose one of {OBJECTIVES}")
    if objective == "mlm" and (generator_network is not None or
                               uniform_generator):
      raise ValueError("objective 'mlm' trains the discriminator network as a "
                       "masked LM: pass generator_network=None and "
                       "uniform_generator=False")
    samplers = [generator_network is not None, bool(uniform_generator),
                unigram_counts is not None]
    if objective == "mlm" and unigram_counts is not None:
      raise ValueError("objective 'mlm' has no generator: pass "
                       "unigram_counts=None")
    if objective != "mlm" and sum(samplers) != 1:
      raise ValueError(f"objective {objective!r} needs either a "
                       "generator_network, uniform_generator=True or "
                       "unigram_counts (exactly one)")
    if unigram_counts is not None and disallow_correct:
      raise ValueError("disallow_correct is not available with a unigram "
                       "generator")
    self._config = {
        "discriminator_network": discriminator_network,
        "generator_network": generator_network,
        "mask_token_id": mask_token_id,
        "excluded_token_ids": list(excluded_token_ids),
        "max_predictions_per_seq": max_predictions_per_seq,
        "mask_prob": mask_prob,
        "objective": objective,
        "generator_loss_weight": generator_loss_weight,
        "discriminator_loss_weight": discriminator_loss_weight,
        "temperature": temperature,
        "uniform_generator": uniform_generator,
        "unigram_counts": (None if unigram_counts is None else
                           [int(count) for count in unigram_counts]),
        "seed": seed,
        "initializer_range": initializer_range,
        "disallow_correct": disallow_correct,
        "masking_draws": masking_draws,
    }
    self.objective = objective
    self.generator_loss_weight = generator_loss_weight
    self.discriminator_loss_weight = discriminator_loss_weight
    self.vocab_size = discriminator_network.embedding_layer.vocab_size
    self.discriminator_network = discriminator_network
    self.generator_network = generator_network
    self.masking = dynamic_masking.DynamicMasking(
        mask_token_id=mask_token_id,
        excluded_token_ids=excluded_token_ids,
        max_predictions_per_seq=max_predictions_per_seq,
        mask_prob=mask_prob, draws=masking_draws)
    self.disallow_correct = disallow_correct
    self.unigram_log_probabilities = (
        None if unigram_counts is None else
        _unigram_log_probabilities(unigram_counts, self.vocab_size,
                                   excluded_token_ids))
    self.sampler = replaced_token_sampler.ReplacedTokenSampler(
        temperature, disallow_correct=disallow_correct)
    if generator_network is not None:
      self.generator_head = masked_lm_head.MaskedLMHead(
          generator_network.embedding_layer,
          initializer_range=initializer_range, name="generator_predictions")
    if objective in _DISCRIMINATIVE:
      self.discriminator_head = discriminator_head.DiscriminatorHead(
          discriminator_network.hidden_size,
          initializer_range=initializer_range, name="discriminator_predictions")
    else:
      self.main_mlm_head = masked_lm_head.MaskedLMHead(
          discriminator_network.embedding_layer,
          initializer_range=initializer_range, name="mlm_predictions")
    if objective == "all_tokens_mlm":
      self.copy_head = discriminator_head.DiscriminatorHead(
          discriminator_network.hidden_size,
          initializer_range=initializer_range, name="copy_predictions")
    with tf.init_scope():
      self.seed_generator = (
          tf.random.Generator.from_seed(seed) if seed is not None else
          tf.random.Generator.from_non_deterministic_state())
    self.pretraining_metrics = pretraining_metrics.PretrainingMetrics(
        has_generator=generator_network is not None or objective == "mlm",
        has_sampling=objective != "mlm",
        has_discriminator=objective in _DISCRIMINATIVE,
        has_main_mlm=objective in ("replace_mlm", "all_tokens_mlm"))

  @property
  def metrics(self):
    return self.pretraining_metrics.all_metrics

  def call(self, inputs, training=None):
    """One forward pass of the objective, with fresh masks and samples.

    Args:
      inputs: dict of int `[batch, seq_len]` `input_word_ids`, `input_mask`,
        `input_type_ids`.
      training: Whether dropout is active.

    Returns:
      dict of the tensors the losses and metrics need (see `_forward`).
    """
    seeds = self.seed_generator.make_seeds(3)
    return self._forward(inputs, seeds, training)

  def _forward(self, inputs, seeds, training):
    input_ids = inputs["input_word_ids"]
    input_mask = inputs["input_mask"]
    outputs = dict(self.masking(input_ids, input_mask, seed=seeds[:, 0]))
    outputs["input_mask"] = tf.cast(input_mask, tf.float32)
    positions = outputs["masked_positions"]

    def encode(network, word_ids):
      return network({"input_word_ids": word_ids, "input_mask": input_mask,
                      "input_type_ids": inputs["input_type_ids"]},
                     training=training)["sequence_output"]

    if self.objective == "mlm":
      main_sequence = encode(self.discriminator_network,
                             outputs["masked_input_ids"])
      outputs["generator_logits"] = self.main_mlm_head(main_sequence, positions)
      return outputs

    if self.generator_network is not None:
      generator_sequence = encode(self.generator_network,
                                  outputs["masked_input_ids"])
      outputs["generator_logits"] = self.generator_head(generator_sequence,
                                                        positions)
      originals = ({"original_ids": outputs["masked_ids"]}
                   if self.disallow_correct else {})
      sampled_ids = self.sampler(outputs["generator_logits"], seed=seeds[:, 1],
                                 **originals)
    elif self.unigram_log_probabilities is not None:
      sampled_ids = self._sample_unigram(outputs["masked_ids"], seeds[:, 1])
    else:
      sampled_ids = self._sample_uniformly(outputs["masked_ids"], seeds[:, 1])
    weights = outputs["masked_weights"]
    sampled_ids = tf.cast(sampled_ids, input_ids.dtype)
    # Only real slots write; a position drawn twice (`with_replacement`) gets
    # the floor of its samples' mean, as the original's scatter_update.
    corrupted_ids = dynamic_masking.scatter_into_positions(
        outputs["masked_input_ids"], positions, sampled_ids, weights > 0)
    outputs["sampled_ids"] = sampled_ids
    outputs["corrupted_ids"] = corrupted_ids
    # A sample equal to the original counts as original.
    outputs["replaced_token_labels"] = tf.cast(
        tf.not_equal(corrupted_ids, input_ids), tf.int32) * tf.cast(
            input_mask, tf.int32)

    main_sequence = encode(self.discriminator_network, corrupted_ids)
    if self.objective in _DISCRIMINATIVE:
      outputs["discriminator_logits"] = self.discriminator_head(main_sequence)
      if self.objective == "electra_15":
        outputs["discriminator_weights"] = dynamic_masking.scatter_into_positions(
            tf.zeros_like(outputs["input_mask"]), positions, weights,
            weights > 0)
      else:
        outputs["discriminator_weights"] = outputs["input_mask"]
    elif self.objective == "replace_mlm":
      outputs["main_mlm_logits"] = self.main_mlm_head(main_sequence, positions)
    else:
      outputs["main_mlm_logits"] = self.main_mlm_head(main_sequence)
      outputs["copy_logits"] = self.copy_head(main_sequence)
    return outputs

  def _sample_unigram(self, masked_ids, seed):
    """Replacement ids drawn from the unigram distribution, int32 `[batch, N]`
    (independent draws, one per slot)."""
    shape = tf.shape(masked_ids)
    draws = tf.random.stateless_categorical(
        self.unigram_log_probabilities[tf.newaxis], shape[0] * shape[1],
        seed=seed, dtype=tf.int32)
    return tf.reshape(draws, shape)

  def _sample_uniformly(self, masked_ids, seed):
    """Uniform replacement ids, int32 `[batch, N]` (the uniform generator).

    With `disallow_correct`, uniform over the other `vocab_size - 1` ids.
    """
    if not self.disallow_correct:
      return tf.random.stateless_uniform(
          tf.shape(masked_ids), seed=seed, maxval=self.vocab_size,
          dtype=tf.int32)
    others = tf.random.stateless_uniform(
        tf.shape(masked_ids), seed=seed, maxval=self.vocab_size - 1,
        dtype=tf.int32)
    return others + tf.cast(others >= tf.cast(masked_ids, tf.int32), tf.int32)

  def compute_pretraining_losses(self, inputs, outputs):
    """Weighted losses of the objective.

    Returns:
      dict with the float32 scalar `loss` (the weighted total, this replica's
      share of the global-batch loss) and, for each component present
      (`generator`, `discriminator`, `main_mlm`), a pair
      `(scalar loss, per-item loss)`.
    """
    losses = {}
    total = tf.constant(0.0, tf.float32)
    if "generator_logits" in outputs:
      losses["generator"] = pretraining_losses.masked_lm_loss(
          outputs["generator_logits"], outputs["masked_ids"],
          outputs["masked_weights"])
      weight = 1.0 if self.objective == "mlm" else self.generator_loss_weight
      total += weight * losses["generator"][0]
    if "discriminator_logits" in outputs:
      losses["discriminator"] = (
          pretraining_losses.replaced_token_detection_loss(
              outputs["discriminator_logits"], outputs["replaced_token_labels"],
              outputs["discriminator_weights"]))
      total += self.discriminator_loss_weight * losses["discriminator"][0]
    if self.objective == "replace_mlm":
      losses["main_mlm"] = pretraining_losses.masked_lm_loss(
          outputs["main_mlm_logits"], outputs["masked_ids"],
          outputs["masked_weights"])
      total += losses["main_mlm"][0]
    elif self.objective == "all_tokens_mlm":
      losses["main_mlm"] = pretraining_losses.copy_mechanism_loss(
          outputs["main_mlm_logits"], outputs["copy_logits"],
          outputs["corrupted_ids"], inputs["input_word_ids"],
          outputs["input_mask"])
      total += losses["main_mlm"][0]
    losses["loss"] = total
    return losses

  def train_step(self, data):
    with tf.GradientTape() as tape:
      outputs = self(data, training=True)
      losses = self.compute_pretraining_losses(data, outputs)
      loss = losses["loss"]
      scaled_loss = loss
      if isinstance(self.optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
        scaled_loss = self.optimizer.get_scaled_loss(loss)
    # Read after the forward pass: the first call builds the variables.
    variables = self.trainable_variables
    gradients = tape.gradient(scaled_loss, variables)
    if isinstance(self.optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
      gradients = self.optimizer.get_unscaled_gradients(gradients)
    gradients = [tf.convert_to_tensor(gradient) for gradient in gradients]
    # Sum over replicas first, then clip the global batch's gradient norm
    # (1.0, as the original), so any number of replicas takes the same step.
    context = tf.distribute.get_replica_context()
    if context.num_replicas_in_sync > 1:
      gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
    gradients, _ = tf.clip_by_global_norm(gradients, clip_norm=1.0)
    self.optimizer.apply_gradients(
        zip(gradients, variables), experimental_aggregate_gradients=False)
    self.pretraining_metrics.update(data, outputs, losses)
    return self.pretraining_metrics.results()

  def test_step(self, data):
    outputs = self(data, training=False)
    losses = self.compute_pretraining_losses(data, outputs)
    self.pretraining_metrics.update(data, outputs, losses)
    return self.pretraining_metrics.results()

  def get_config(self):
    return dict(self._config)

  @classmethod
  def from_config(cls, config):
    return cls(**config)


def _unigram_log_probabilities(counts, vocab_size, excluded_token_ids):
  """float32 `[vocab_size]` log-probabilities of the counts, with the excluded
  ids (and ids never seen) at a log-probability no draw can reach."""
  counts = np.asarray(counts, np.float64)
  if counts.shape != (vocab_size,) or (counts < 0).any():
    raise ValueError(f"unigram_counts must be {vocab_size} non-negative "
                     f"counts, got shape {counts.shape}")
  counts[list(excluded_token_ids)] = 0
  if not counts.sum():
    raise ValueError("unigram_counts has no count outside the excluded ids")
  with np.errstate(divide="ignore"):
    log_probabilities = np.log(counts / counts.sum())
  log_probabilities[counts == 0] = _NEVER
  return tf.constant(log_probabilities, tf.float32)
