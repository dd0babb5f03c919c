"""Our pretraining step against the independent PyTorch reference
(`official_electra/parity/reference.py`), step for step.

From the same weights, on the same batch, fed the same random draws (our
masking's and sampler's uniforms, read from the seeds our step will use),
one step of ours and one of the reference must give the same masked input,
the same samples, the same losses, the same gradients and the same updated
weights; then 30 steps the same loss trajectory. Each side is its own code
(the reference shares none of `official_electra.modeling` or
`official_electra.optimization`), so a changed loss weight, masking rule,
sampling temperature, schedule or weight-decay exclusion on either side
fails here.

Tolerances: both sides compute in float32 with different kernels (fused QKV
against three projections, other summation orders), so values agree to
float32 rounding scaled by the computation's depth: losses and gradients
within 1e-5 relative (plus 1e-7 absolute for gradients near 0), measured at
about 1e-6. Updated weights are compared through the update `w' - w`, to
1e-4 relative to the largest update of the tensor: Adam's first step moves a
coordinate by `lr x g / (|g| sqrt(1 - beta_2) + eps)`, which is flat in `g`
except for gradients near `eps`, where a float32 difference in `g` moves
the update by at most that relative amount; the weight decay the
exclusions switch is 0.01 x |w| ~ 1e-2 of the update for a LayerNorm
scale, 100x the tolerance.
"""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling import encoder_config
from official_electra.modeling.models import electra_pretrainer
from official_electra.optimization import optimizer_factory
from tests.modeling import tiny
from tests.parity import updates

torch = pytest.importorskip("torch")
reference = pytest.importorskip("official_electra.parity.reference")
from official_electra.parity import ours  # pylint: disable=g-import-not-at-top,wrong-import-position
from official_electra.parity import torch_side  # pylint: disable=g-import-not-at-top,wrong-import-position

BATCH_SIZE, SEQ_LEN, SLOTS = 8, 24, 4
CONFIG = tiny.TINY  # Dropout 0: nothing random but the masking and sampling.
GENERATOR_FRACTION = 0.25  # Width 8 against embeddings of 16: a projection.
LEARNING_RATE = 1e-3
WEIGHT_DECAY = 0.01


def _batch(seed):
  return tiny.batch(BATCH_SIZE, SEQ_LEN, padded_rows=3, real_len=15,
                    pattern=False, seed=seed)


def _randomize(pretrainer, seed):
  """Every weight drawn at random, so that none (a bias, a LayerNorm offset)
  is a zero that hides a wrong update; the generator's output bias spread
  wide (std 2), so that its softmax is far from uniform and the sampling
  temperature changes the samples."""
  rng = np.random.default_rng(seed)
  for variable in pretrainer.trainable_variables:
    shape = variable.shape
    value = rng.normal(0.0, 0.05, shape)
    if "gamma" in variable.name:
      value += 1.0
    if "output_bias" in variable.name:
      value = rng.normal(0.0, 2.0, shape)
    variable.assign(value.astype(np.float32))


class Pair:
  """Our pretrainer and the reference, from the same weights.

  Each side keeps its own defaults for what the paper fixes (masking rate,
  the 85% `[MASK]` share, loss weights 1 and 50, temperature 1, the
  optimizer's betas, epsilon and exclusions), so that a changed default on
  either side fails the comparison.
  """

  def __init__(self, objective, num_train_steps=100, num_warmup_steps=0,
               draws="without_replacement", weights_seed=0):
    embeddings = encoder_config.build_embeddings(CONFIG)
    discriminator = encoder_config.build_encoder(CONFIG, embeddings,
                                                 "discriminator")
    generator = None
    if objective == "electra":
      generator = encoder_config.build_encoder(
          CONFIG.scaled(GENERATOR_FRACTION), embeddings, "generator")
    self.objective = objective
    self.pretrainer = electra_pretrainer.ElectraPretrainer(
        tiny.model(objective, discriminator, generator),
        mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
        max_predictions_per_seq=SLOTS, objective=objective,
        masking_draws=draws, seed=7)
    self.pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
        "adamw", LEARNING_RATE, num_train_steps, num_warmup_steps,
        WEIGHT_DECAY))
    self.pretrainer(_batch(0))
    _randomize(self.pretrainer, weights_seed)
    self.settings = reference.Settings(
        objective=objective, mask_token_id=tiny.MASK_ID,
        never_masked_ids=tiny.SPECIAL_IDS, max_predictions_per_seq=SLOTS,
        draws=draws)
    self.reference = torch_side.build_reference(self.pretrainer,
                                                self.settings)
    self.optimizer = reference.ReferenceAdamW(
        self.reference.named_parameters(), LEARNING_RATE, num_train_steps,
        num_warmup_steps, WEIGHT_DECAY)

  def noise(self):
    """The uniforms our next step draws, and its seeds."""
    seeds = ours.next_step_seeds(self.pretrainer)
    return seeds, ours.noise_of_seeds(
        seeds, BATCH_SIZE, SEQ_LEN, SLOTS, CONFIG.vocab_size,
        self.settings.draws, sampling=self.objective == "electra")

  def our_forward(self, batch, seeds):
    """Our forward outputs, losses and gradients (reference names) at the
    current weights, with the step's seeds."""
    pretrainer = self.pretrainer
    with tf.GradientTape() as tape:
      outputs = pretrainer(batch, training=True, seeds=seeds)
      losses = pretrainer.compute_pretraining_losses(batch, outputs)
    variables = pretrainer.trainable_variables
    gradients = {variable.ref(): tf.convert_to_tensor(gradient).numpy()
                 for variable, gradient in zip(
                     variables, tape.gradient(losses["loss"], variables))}
    return outputs, losses, ours.reference_names(ours.hf_states(
        pretrainer, self.objective,
        value_of=lambda variable: gradients[variable.ref()]))

  def reference_forward(self, batch, noise):
    self.optimizer.zero_grad()
    outputs = self.reference(torch_side.torch_batch(batch),
                             torch_side.torch_noise(noise))
    outputs["loss"].backward()
    return outputs, {name: parameter.grad.numpy().copy()
                     for name, parameter in self.reference.named_parameters()}

  def our_weights(self):
    return ours.reference_names(ours.hf_states(self.pretrainer,
                                               self.objective))

  def reference_weights(self):
    return {name: parameter.detach().numpy().copy()
            for name, parameter in self.reference.named_parameters()}

  def step(self, batch):
    """One training step on each side (ours through the product's compiled
    train function, as `fit` runs it); returns `(our metrics, reference
    outputs)`."""
    _, noise = self.noise()
    reference_outputs, _ = self.reference_forward(batch, noise)
    self.optimizer.step()
    self.pretrainer.reset_metrics()
    logs = self.pretrainer.make_train_function()(
        iter(tf.data.Dataset.from_tensors(batch)))
    return {name: float(value) for name, value in logs.items()}, (
        reference_outputs)


def _main_mlm_loss(losses):
  return float(losses["generator"][0])


def _assert_same_step_inputs(outputs, reference_outputs, objective):
  np.testing.assert_array_equal(outputs["masked_positions"].numpy(),
                                reference_outputs["positions"].numpy())
  np.testing.assert_array_equal(outputs["masked_input_ids"].numpy(),
                                reference_outputs["masked_input_ids"].numpy())
  np.testing.assert_array_equal(outputs["masked_weights"].numpy(),
                                reference_outputs["weights"].numpy())
  if objective == "electra":
    np.testing.assert_array_equal(outputs["sampled_ids"].numpy(),
                                  reference_outputs["sampled_ids"].numpy())
    np.testing.assert_array_equal(
        outputs["replaced_token_labels"].numpy(),
        reference_outputs["labels"].numpy().astype(np.int32))


def _assert_close_dicts(ours_values, reference_values, rtol, atol, what):
  assert set(ours_values) == set(reference_values), (
      f"{what}: names differ: ours only "
      f"{sorted(set(ours_values) - set(reference_values))}, reference only "
      f"{sorted(set(reference_values) - set(ours_values))}")
  for name, value in reference_values.items():
    np.testing.assert_allclose(ours_values[name], value, rtol=rtol, atol=atol,
                               err_msg=f"{what}: {name}")


@pytest.mark.parametrize("objective,draws", [
    ("electra", "without_replacement"),
    ("electra", "with_replacement"),
    ("mlm", "without_replacement"),
])
def test_one_step_same_losses_gradients_and_weights(objective, draws):
  pair = Pair(objective, draws=draws)
  batch = _batch(1)
  seeds, noise = pair.noise()
  outputs, losses, our_gradients = pair.our_forward(batch, seeds)
  reference_outputs, reference_gradients = pair.reference_forward(batch,
                                                                  noise)
  _assert_same_step_inputs(outputs, reference_outputs, objective)
  # Something is replaced and something is not: the labels decide the loss.
  if objective == "electra":
    labels = reference_outputs["labels"].numpy()
    assert 0 < labels.sum() < (batch["input_mask"].numpy()).sum()
  np.testing.assert_allclose(float(losses["loss"]),
                             float(reference_outputs["loss"].detach()), rtol=1e-5)
  np.testing.assert_allclose(_main_mlm_loss(losses),
                             float(reference_outputs["mlm_loss"].detach()), rtol=1e-5)
  if objective == "electra":
    np.testing.assert_allclose(float(losses["discriminator"][0]),
                               float(reference_outputs["rtd_loss"].detach()),
                               rtol=1e-5)
  _assert_close_dicts(our_gradients, reference_gradients, 1e-5, 1e-7,
                      "gradients")

  before = pair.our_weights()
  _assert_close_dicts(before, pair.reference_weights(), 0, 0, "weights")
  pair.step(batch)
  after, reference_after = pair.our_weights(), pair.reference_weights()
  updates.assert_same_updates(before, after, reference_after, LEARNING_RATE)
  # Every tensor moved but the attention queries and keys, whose gradients
  # are near 0 at this near-uniform attention (exactly 0 for the key bias):
  # the comparison above is not one of tensors that stood still.
  still = [name for name, value in reference_after.items()
           if np.abs(value - before[name]).max() < 0.1 * LEARNING_RATE
           and "attention.self.key" not in name
           and "attention.self.query" not in name]
  assert not still


@pytest.mark.parametrize("objective", ["electra", "mlm"])
def test_thirty_steps_same_loss_trajectory(objective):
  """Warm-up over 5 steps, linear decay to 0 at step 40, a new batch every
  step: the losses of 30 steps agree to 1e-4 relative (float32 differences
  compound over the steps; they stay near 1e-5)."""
  pair = Pair(objective, num_train_steps=40, num_warmup_steps=5)
  ours_losses, reference_losses = [], []
  for step in range(30):
    metrics, reference_outputs = pair.step(_batch(100 + step))
    ours_losses.append(metrics["loss"])
    reference_losses.append(float(reference_outputs["loss"].detach()))
  np.testing.assert_allclose(ours_losses, reference_losses, rtol=1e-4)
  # The trajectory is not flat: the models learn over the 30 steps.
  assert min(ours_losses[-5:]) < 0.9 * ours_losses[0]
