"""The weighted losses of each pretraining objective (`objectives.SPECS`),
from the pretrainer's forward outputs."""

import tensorflow as tf

from official_electra.modeling import objectives
from official_electra.modeling.layers import elementwise_gradients
from official_electra.modeling.models import pretraining_losses
from official_electra.modeling.models import two_stage


def losses(spec: objectives.ObjectiveSpec, inputs, outputs, *,
           generator_loss_weight: float, discriminator_loss_weight: float,
           temperature: float, stage=None, denominators=None, step=None,
           adversarial_mle_steps: int = 0) -> dict:
  """Weighted losses of objective `spec`.

  Args:
    spec: the objective.
    inputs: the batch.
    outputs: the pretrainer's forward outputs (`ElectraPretrainer._forward`).
    generator_loss_weight: weight of the generator's MLM loss (of its
      REINFORCE loss for `adversarial`).
    discriminator_loss_weight: weight of the RTD loss.
    temperature: the sampling temperature (REINFORCE's log-probabilities).
    stage: Two-Stage's stage (`two_stage.GENERATOR_STAGE`: the MLM loss
      alone; `DISCRIMINATOR_STAGE`: the RTD loss alone, the generator's MLM
      loss reported but not added), or None.
    denominators: for one micro-batch of an accumulated step, the global
      sums over the whole batch of the masked slots' weights (`masked`) and
      of the tokens' (`tokens`), so that the micro-batches' losses add up
      to the whole batch's; None for the batch's own sums.
    step: int64 scalar, the optimizer's step (`adversarial` with
      `adversarial_mle_steps` only).
    adversarial_mle_steps: `adversarial`: steps at the start in which the
      generator is trained by MLE instead of REINFORCE.

  Returns:
    dict with the float32 scalar `loss` (the weighted total, this replica's
    share of the global-batch loss) and, for each component present
    (`generator`, `discriminator`, `main_mlm`, and for `adversarial`
    `reinforce` and `baseline`), a pair `(scalar loss, per-item loss)`.
  """
  masked = tokens = None
  if denominators is not None:
    masked, tokens = denominators["masked"], denominators["tokens"]
  discriminator_denominator = masked if spec.rtd_on_masked_only else tokens
  found = {}
  total = tf.constant(0.0, tf.float32)
  if "generator_logits" in outputs:
    found["generator"] = pretraining_losses.masked_lm_loss(
        outputs["generator_logits"], outputs["masked_ids"],
        outputs["masked_weights"], masked)
    if (not spec.samples_replacements or
        stage == two_stage.GENERATOR_STAGE):
      total += found["generator"][0]
    elif spec.reinforce and "baseline_logits" in outputs:
      reinforce = _adversarial_generator_loss(
          outputs, found, temperature, masked, discriminator_denominator)
      if adversarial_mle_steps:
        reinforce = tf.where(step < adversarial_mle_steps,
                             found["generator"][0], reinforce)
      total += generator_loss_weight * reinforce + found["baseline"][0]
    elif not spec.two_stage:
      total += generator_loss_weight * found["generator"][0]
  if "discriminator_logits" in outputs:
    if "discriminator" not in found:
      found["discriminator"] = (
          pretraining_losses.replaced_token_detection_loss(
              outputs["discriminator_logits"],
              outputs["replaced_token_labels"],
              outputs["discriminator_weights"], discriminator_denominator))
    total += discriminator_loss_weight * found["discriminator"][0]
  if spec.main_network_mlm and spec.main_task == objectives.PREDICTS_MASKED:
    found["main_mlm"] = pretraining_losses.masked_lm_loss(
        outputs["main_mlm_logits"], outputs["masked_ids"],
        outputs["masked_weights"], masked)
    total += found["main_mlm"][0]
  elif spec.main_task == objectives.PREDICTS_ALL_TOKENS:
    found["main_mlm"] = pretraining_losses.copy_mechanism_loss(
        outputs["main_mlm_logits"], outputs["copy_logits"],
        outputs["corrupted_ids"], inputs["input_word_ids"],
        outputs["input_mask"], tokens)
    total += found["main_mlm"][0]
  found["loss"] = total
  return found


def _adversarial_generator_loss(outputs, found, temperature,
                                masked_denominator,
                                discriminator_denominator):
  """Adversarial ELECTRA's REINFORCE loss of the generator (adds the RTD,
  REINFORCE and baseline losses to `found`): the reward of a slot's sample
  is the discriminator's loss at its position."""
  found["discriminator"] = pretraining_losses.replaced_token_detection_loss(
      outputs["discriminator_logits"], outputs["replaced_token_labels"],
      outputs["discriminator_weights"], discriminator_denominator)
  rewards = tf.gather(found["discriminator"][1],
                      outputs["masked_positions"], batch_dims=1)
  logits = tf.cast(outputs["generator_logits"], tf.float32)
  sample_log_probabilities = -elementwise_gradients.sparse_softmax_cross_entropy(
      logits / temperature, tf.cast(outputs["sampled_ids"], tf.int32))
  found["reinforce"], found["baseline"] = pretraining_losses.reinforce_loss(
      sample_log_probabilities, rewards, outputs["baseline_logits"],
      outputs["masked_weights"], masked_denominator)
  return found["reinforce"][0]
