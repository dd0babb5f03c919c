"""ELECTRA pretraining: replaced token detection and the paper's ablations."""

import tensorflow as tf
import tf_keras

from official_electra.modeling import objectives
from official_electra.modeling.layers import dynamic_masking
from official_electra.modeling.layers import fixed_replacements
from official_electra.modeling.layers import replaced_token_sampler
from official_electra.modeling.layers import span_masking
from official_electra.modeling.models import gradient_accumulation
from official_electra.modeling.models import gradient_clipping
from official_electra.modeling.models import objective_losses
from official_electra.modeling.models import pretrainer_checks
from official_electra.modeling.models import pretraining_losses
from official_electra.modeling.models import pretraining_metrics
from official_electra.modeling.models import two_stage
from official_electra.modeling.models import unconverted_steps

# The objectives of Clark et al. (2020), each described by its spec
# (`objectives.SPECS`).
OBJECTIVES = objectives.OBJECTIVES
# Two-Stage ELECTRA's stages: the generator alone, then the discriminator.
GENERATOR_STAGE = two_stage.GENERATOR_STAGE
DISCRIMINATOR_STAGE = two_stage.DISCRIMINATOR_STAGE


@tf_keras.utils.register_keras_serializable(package="official_electra")
@unconverted_steps.steps_without_autograph
class ElectraPretrainer(tf_keras.Model):
  """The pretraining procedure of an `ElectraModel`: a custom `train_step`.

  The pretrainer owns the model's towers and heads under the model's
  attribute names (so its checkpoint's `model/` holds the weights in the
  layout every reader's `ElectraModel` restores) and adds what is not a
  weight: the masking, the sampler, the losses, the metrics, the random
  state of masking and sampling and Two-Stage's stage.

  One step (objective `electra`): mask the batch dynamically; the generator
  predicts the original tokens at the masked slots; replacements are sampled
  from its softmax (Gumbel-max, no gradient); the discriminator labels every
  token as original or replaced. Loss = `generator_loss_weight` x MLM +
  `discriminator_loss_weight` x RTD (1.0 and 50.0 in the paper).

  Objectives (one argument, one model): `OBJECTIVES`, each an
  `objectives.ObjectiveSpec` that says what it trains (`objectives.SPECS`:
  the BERT baseline `mlm`, whose `discriminator_network` is trained as a
  masked LM with no generator; the ablations of Section 3.2; Two-Stage and
  Adversarial ELECTRA of Section 3.3, whose stages `two_stage` describes and
  whose REINFORCE loss is `pretraining_losses.reinforce_loss`). The code
  below reads the spec, never the name. For `mlm`-style objectives the main
  network's MLM loss has weight 1.

  Args:
    model: The `ElectraModel` trained (weights only: its
      `discriminator_network`, the network kept after pretraining, its
      `generator_network`, normally on the same `ElectraEmbeddings` (tied),
      absent for `mlm` and a uniform or unigram sampler, and at least the
      heads the objective trains, `ObjectiveSpec.heads`). Build it from a
      `ModelConfig` (`ElectraModel.from_config`; `training/architecture.py`
      does) or from two networks (`ElectraModel(discriminator, generator,
      heads=...)`).
    mask_token_id: Id of `[MASK]`.
    excluded_token_ids: Ids never masked (`[CLS]`, `[SEP]`, `[PAD]`...).
    max_predictions_per_seq: Masked slots per sequence.
    mask_prob: Fraction of tokens masked (0.15; 0.25 for Large).
    objective: One of `OBJECTIVES` (or its `ObjectiveSpec`).
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
      `with_replacement`; see `DynamicMasking`). `tokens` masking only.
    masking_scheme: What is masked, one of `span_masking.SCHEMES`: tokens
      (the paper's), SpanBERT's spans or whole words (`masking_layer`).
    continuation_token_ids: Ids of the vocabulary's continuation pieces
      (`##...`; `span_masking.continuation_token_ids`), which `spans` and
      `whole_words` keep with the word they continue.
    adversarial_mle_steps: `adversarial` only: steps at the start in which the
      generator is trained by MLE (its MLM loss) instead of REINFORCE.
    gradient_accumulation_steps: micro-batches per optimizer step: each
      replica's batch is split into this many, run one after another, and
      their gradients summed before the one clipping and update (see
      `_accumulated_gradients`). It must divide the per-replica batch.
    seed: Seed of the masking and sampling randomness (state is a variable,
      saved in checkpoints, so a resumed run draws the same masks).
    **kwargs: `tf_keras.Model` arguments.
  """

  def __init__(self,
               model=None,
               mask_token_id=None,
               excluded_token_ids=(),
               max_predictions_per_seq=None,
               mask_prob=0.15,
               objective="electra",
               generator_loss_weight=1.0,
               discriminator_loss_weight=50.0,
               temperature=1.0,
               uniform_generator=False,
               unigram_counts=None,
               seed=None,
               disallow_correct=False,
               masking_draws="without_replacement",
               masking_scheme="tokens",
               continuation_token_ids=(),
               adversarial_mle_steps=0,
               gradient_accumulation_steps=1,
               **kwargs):
    super().__init__(**kwargs)
    spec = objectives.get(objective)
    objective = spec.name
    pretrainer_checks.check_arguments(
        spec, model, mask_token_id=mask_token_id,
        max_predictions_per_seq=max_predictions_per_seq,
        uniform_generator=uniform_generator, unigram_counts=unigram_counts,
        disallow_correct=disallow_correct, masking_draws=masking_draws,
        masking_scheme=masking_scheme,
        adversarial_mle_steps=adversarial_mle_steps,
        gradient_accumulation_steps=gradient_accumulation_steps)
    discriminator_network = model.discriminator_network
    generator_network = getattr(model, "generator_network", None)
    self._config = {
        "model": model,
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
        "disallow_correct": disallow_correct,
        "masking_draws": masking_draws,
        "masking_scheme": masking_scheme,
        "continuation_token_ids": [int(token_id) for token_id in
                                   continuation_token_ids],
        "adversarial_mle_steps": adversarial_mle_steps,
        "gradient_accumulation_steps": gradient_accumulation_steps,
    }
    self.objective = objective
    self.spec = spec
    self.generator_loss_weight = generator_loss_weight
    self.discriminator_loss_weight = discriminator_loss_weight
    self.vocab_size = discriminator_network.embedding_layer.vocab_size
    self.discriminator_network = discriminator_network
    self.generator_network = generator_network
    self.masking = span_masking.masking_layer(
        masking_scheme, mask_token_id=mask_token_id,
        excluded_token_ids=excluded_token_ids,
        continuation_token_ids=continuation_token_ids,
        vocab_size=self.vocab_size,
        max_predictions_per_seq=max_predictions_per_seq, mask_prob=mask_prob,
        masking_draws=masking_draws)
    self.disallow_correct = disallow_correct
    self.unigram_log_probabilities = (
        None if unigram_counts is None else
        fixed_replacements.unigram_log_probabilities(
            unigram_counts, self.vocab_size, excluded_token_ids))
    self.sampler = replaced_token_sampler.ReplacedTokenSampler(
        temperature, disallow_correct=disallow_correct)
    # The weights' objects, under the model's attribute names (the
    # checkpoint layout): the pretrainer trains them in place.
    for name, part in model.parts().items():
      setattr(self, name, part)
    self.adversarial_mle_steps = int(adversarial_mle_steps)
    self.gradient_accumulation_steps = int(gradient_accumulation_steps)
    # Two-Stage's stage: a variable (saved with the checkpoint) and its value
    # when the train step was last traced (`_traced_stage`).
    self._traced_stage = None
    if spec.two_stage:
      with tf.init_scope():
        self.stage = tf.Variable(
            GENERATOR_STAGE, dtype=tf.int32, trainable=False, name="stage",
            synchronization=tf.VariableSynchronization.ON_WRITE,
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    with tf.init_scope():
      self.seed_generator = (
          tf.random.Generator.from_seed(seed) if seed is not None else
          tf.random.Generator.from_non_deterministic_state())
    self.pretraining_metrics = pretraining_metrics.PretrainingMetrics(
        has_generator=(generator_network is not None or
                       not spec.samples_replacements),
        has_sampling=spec.samples_replacements,
        has_discriminator=spec.detects_replacements,
        has_main_mlm=spec.main_network_mlm,
        has_reinforce=spec.reinforce)

  @property
  def metrics(self):
    return self.pretraining_metrics.all_metrics

  def call(self, inputs, training=None, masking=None, seeds=None):
    """One forward pass of the objective, with fresh masks and samples.

    Args:
      inputs: dict of int `[batch, seq_len]` `input_word_ids`, `input_mask`,
        `input_type_ids`.
      training: Whether dropout is active. In training, Two-Stage runs the
        stage its train step was traced for (`train_step`).
      masking: the batch's masking outputs when already drawn (a
        micro-batch of an accumulated step); None draws them.
      seeds: int64 `[2, 3]` seeds of the masking and sampling; None takes
        fresh ones from the pretrainer's generator.

    Returns:
      dict of the tensors the losses and metrics need (see `_forward`).
    """
    if seeds is None:
      seeds = self.seed_generator.make_seeds(3)
    return self._forward(inputs, seeds, training,
                         stage=self._traced_stage if training else None,
                         masking=masking)

  def _forward(self, inputs, seeds, training, stage=None, masking=None):
    """The objective's forward pass.

    `stage` (Two-Stage only): `GENERATOR_STAGE` runs the masked LM of
    stage 1 alone (`discriminator_network` and `main_mlm_head`, as `mlm`);
    `DISCRIMINATOR_STAGE` runs the frozen generator without dropout; None
    (evaluation, building) runs both towers as in stage 2, with `training`
    for both, and builds `main_mlm_head`. `masking`: this batch's masking
    outputs when already drawn (a micro-batch of an accumulated step).
    """
    input_ids = inputs["input_word_ids"]
    input_mask = inputs["input_mask"]
    if masking is None:
      masking = self.masking(input_ids, input_mask, seed=seeds[:, 0])
    outputs = dict(masking)
    outputs["input_mask"] = tf.cast(input_mask, tf.float32)
    positions = outputs["masked_positions"]

    def encode(network, word_ids, network_training=training):
      return network({"input_word_ids": word_ids, "input_mask": input_mask,
                      "input_type_ids": inputs["input_type_ids"]},
                     training=network_training)["sequence_output"]

    if not self.spec.samples_replacements or stage == GENERATOR_STAGE:
      main_sequence = encode(self.discriminator_network,
                             outputs["masked_input_ids"])
      outputs["generator_logits"] = self.main_mlm_head(main_sequence, positions)
      return outputs

    if self.generator_network is not None:
      generator_training = (False if stage == DISCRIMINATOR_STAGE
                            else training)
      generator_sequence = encode(self.generator_network,
                                  outputs["masked_input_ids"],
                                  generator_training)
      outputs["generator_logits"] = self.generator_head(generator_sequence,
                                                        positions)
      if self.spec.reinforce:
        # The baseline trains its head only: the generator's encoder gets
        # no gradient but REINFORCE's (and the MLE warm-up's).
        outputs["baseline_logits"] = tf.squeeze(self.baseline_head(
            tf.gather(tf.stop_gradient(generator_sequence), positions,
                      batch_dims=1)), -1)
      originals = ({"original_ids": outputs["masked_ids"]}
                   if self.disallow_correct else {})
      sampled_ids = self.sampler(outputs["generator_logits"], seed=seeds[:, 1],
                                 **originals)
    elif self.unigram_log_probabilities is not None:
      sampled_ids = fixed_replacements.sample_unigram(
          self.unigram_log_probabilities, outputs["masked_ids"], seeds[:, 1])
    else:
      sampled_ids = fixed_replacements.sample_uniformly(
          outputs["masked_ids"], seeds[:, 1], self.vocab_size,
          self.disallow_correct)
    weights = outputs["masked_weights"]
    outputs.update(dynamic_masking.place_samples(
        outputs["masked_input_ids"], input_ids, input_mask, positions,
        sampled_ids, weights))
    corrupted_ids = outputs["corrupted_ids"]

    main_sequence = encode(self.discriminator_network, corrupted_ids)
    if self.spec.two_stage and stage is None:
      # Builds stage 1's head (its variables are in every checkpoint).
      self.main_mlm_head(main_sequence, positions)
    if self.spec.detects_replacements:
      outputs["discriminator_logits"] = self.discriminator_head(main_sequence)
      if self.spec.rtd_on_masked_only:
        outputs["discriminator_weights"] = dynamic_masking.scatter_into_positions(
            tf.zeros_like(outputs["input_mask"]), positions, weights,
            weights > 0)
      else:
        outputs["discriminator_weights"] = outputs["input_mask"]
    elif self.spec.main_task == objectives.PREDICTS_MASKED:
      outputs["main_mlm_logits"] = self.main_mlm_head(main_sequence, positions)
    else:
      outputs["main_mlm_logits"] = self.main_mlm_head(main_sequence)
      outputs["copy_logits"] = self.copy_head(main_sequence)
    return outputs

  def compute_pretraining_losses(self, inputs, outputs, stage=None,
                                 denominators=None):
    """Weighted losses of the objective (`objective_losses.losses`; `stage`
    and `denominators` as there)."""
    step = None
    if self.adversarial_mle_steps:
      step = (self.optimizer.iterations if self.optimizer is not None
              else tf.constant(0, tf.int64))
    return objective_losses.losses(
        self.spec, inputs, outputs,
        generator_loss_weight=self.generator_loss_weight,
        discriminator_loss_weight=self.discriminator_loss_weight,
        temperature=self.sampler.temperature, stage=stage,
        denominators=denominators, step=step,
        adversarial_mle_steps=self.adversarial_mle_steps)

  @property
  def current_stage(self):
    """Two-Stage's stage (read eagerly), None for the other objectives."""
    if not self.spec.two_stage:
      return None
    with tf.init_scope():
      return int(self.stage.numpy())

  def start_discriminator_stage(self):
    """Two-Stage's switch: the generator becomes a copy of stage 1's masked
    LM (`discriminator_network` and `main_mlm_head`: embeddings, every layer
    and the head), so that the discriminator, which goes on from those
    weights with a new RTD head, starts equal to the generator; stage 2
    begins."""
    if not self.spec.two_stage:
      raise ValueError("start_discriminator_stage is for objective "
                       f"'two_stage', not {self.objective!r}")
    if self.current_stage == DISCRIMINATOR_STAGE:
      raise ValueError("the discriminator stage has already begun")
    two_stage.copy_masked_lm(self.discriminator_network, self.main_mlm_head,
                             self.generator_network, self.generator_head)
    self.stage.assign(DISCRIMINATOR_STAGE)
    # The next `fit` (or `evaluate`) traces the stage-2 step.
    self.train_function = None
    self.test_function = None

  def _trained_variables(self, stage):
    """The variables a step updates: all, or one stage's tower and head."""
    if stage is None:
      return self.trainable_variables
    return two_stage.stage_variables(stage, self.discriminator_network,
                                     self.main_mlm_head,
                                     self.discriminator_head)

  def train_step(self, data):
    # Two-Stage: the stage is read when the step is traced (it changes only
    # between `fit` calls, and `start_discriminator_stage` forces a retrace).
    self._traced_stage = self.current_stage
    stage = self._traced_stage
    if self.gradient_accumulation_steps == 1:
      gradients, variables, loss = self._micro_batch_gradients(data, stage)
    else:
      gradients, variables, loss = self._accumulated_gradients(data, stage)
    gradients = gradient_clipping.clip_global_batch_gradients(gradients, 1.0)
    if stage is not None:
      # Slots for every variable, so that a stage's subset is recognised.
      with tf.init_scope():
        getattr(self.optimizer, "inner_optimizer", self.optimizer).build(
            self.trainable_variables)
    self.optimizer.apply_gradients(
        zip(gradients, variables), experimental_aggregate_gradients=False)
    self.pretraining_metrics.update_loss(loss)
    return self.pretraining_metrics.results(
        discriminator=stage != GENERATOR_STAGE)

  def _micro_batch_gradients(self, data, stage, masking=None,
                             denominators=None, seeds=None):
    """One forward and backward pass: `(dense gradients of this replica's
    loss, the variables, the loss)`; updates every metric but the loss."""
    with tf.GradientTape() as tape:
      outputs = self(data, training=True, masking=masking, seeds=seeds)
      losses = self.compute_pretraining_losses(data, outputs, stage,
                                               denominators)
      loss = losses["loss"]
      scaled_loss = loss
      if isinstance(self.optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
        scaled_loss = self.optimizer.get_scaled_loss(loss)
    # Read after the forward pass: the first call builds the variables.
    variables = self._trained_variables(stage)
    gradients = tape.gradient(scaled_loss, variables)
    if isinstance(self.optimizer, tf_keras.mixed_precision.LossScaleOptimizer):
      gradients = self.optimizer.get_unscaled_gradients(gradients)
    gradients = [tf.convert_to_tensor(gradient) for gradient in gradients]
    self.pretraining_metrics.update(data, outputs, losses, update_loss=False)
    return gradients, variables, loss

  def _accumulated_gradients(self, data, stage):
    """The gradient of the whole batch as the sum of
    `gradient_accumulation_steps` micro-batches' (rows split in order).

    The masks are drawn once for the whole batch (the same as without
    accumulation) and each micro-batch's losses are divided by the whole
    batch's weights (`compute_pretraining_losses`'s `denominators`), so the
    sum is the whole batch's gradient; the caller clips it once. The
    micro-batches run one after another in a `tf.while_loop`: memory is
    that of one micro-batch (plus one copy of the gradients).
    """
    # One draw of seeds per step, as without accumulation: the masks are the
    # same.
    seeds = self.seed_generator.make_seeds(3)
    masking = self.masking(data["input_word_ids"], data["input_mask"],
                           seed=seeds[:, 0])
    denominators = pretraining_losses.whole_batch_denominators(
        masking["masked_weights"], data["input_mask"])

    def micro_batch_gradients(inputs, micro_masking, micro_seeds):
      return self._micro_batch_gradients(inputs, stage, micro_masking,
                                         denominators, micro_seeds)

    return gradient_accumulation.accumulated_gradients(
        micro_batch_gradients, data, masking, seeds,
        self.gradient_accumulation_steps,
        # Built: one copy of the micro-batch's graph, every one in the loop.
        self._trained_variables(stage) if self.built else None)

  def test_step(self, data):
    # Two-Stage evaluates the objective of its current stage.
    stage = self.current_stage
    outputs = self._forward(data, self.seed_generator.make_seeds(3),
                            training=False, stage=stage)
    losses = self.compute_pretraining_losses(data, outputs, stage)
    self.pretraining_metrics.update(data, outputs, losses)
    return self.pretraining_metrics.results(
        discriminator=stage != GENERATOR_STAGE)

  def get_config(self):
    return dict(self._config)

  @classmethod
  def from_config(cls, config):
    return cls(**config)
