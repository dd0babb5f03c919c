"""Our side of the parity checks: the random draws a step of our pretrainer
makes, and our weights (or gradients) under the reference's parameter names
(the pretraining reference's, and the fine-tuning reference's for our
`ElectraClassifier`).

Nothing here imports torch: the values are NumPy arrays that
`torch_side.py` turns into the reference's tensors.
"""

import numpy as np
import tensorflow as tf

from official_electra.conversion import electra_parts
from official_electra.conversion import hf_files
from official_electra.conversion import hf_names
from official_electra.conversion import tf1_names
from official_electra.modeling import encoder_config
from official_electra.modeling.layers import philox_random

# Our objectives the reference implements (`reference.OBJECTIVES`).
OBJECTIVES = ("electra", "mlm")


def check_objective(objective):
  if objective not in OBJECTIVES:
    raise ValueError(f"objective {objective!r}: the parity reference "
                     f"implements {', '.join(OBJECTIVES)}")


def next_step_seeds(pretrainer):
  """The int64 `[2, 3]` seeds the pretrainer's next step draws (its masking
  seeds `[:, 0]`, its sampling seeds `[:, 1]`), read from a copy of its
  random generator, which is left as it was."""
  generator = pretrainer.seed_generator
  copy = tf.random.Generator.from_state(generator.state.numpy(),
                                        generator.algorithm)
  return copy.make_seeds(3)


def noise_of_seeds(seeds, batch_size, seq_len, num_slots, vocab_size,
                   draws="without_replacement", sampling=True):
  """The uniforms our masking and sampler draw from `seeds` (a step's
  `[2, 3]`), as the reference's `Noise` fields (NumPy float32).

  Our `DynamicMasking` splits the masking seed in two, draws the position
  keys (`[B, S]`, or `[B, N]` with replacement) from the first and the
  `[MASK]`-or-keep uniforms `[B, N]` from the second; the sampler draws its
  Gumbel uniforms `[B, N, V]` (in (0, 1)) from the sampling seed.
  """
  position_seed, keep_seed = tf.unstack(
      tf.random.experimental.stateless_split(seeds[:, 0], 2))
  position_shape = ([batch_size, seq_len] if draws == "without_replacement"
                    else [batch_size, num_slots])
  noise = {
      "position": tf.random.stateless_uniform(position_shape,
                                              seed=position_seed).numpy(),
      "mask": tf.random.stateless_uniform([batch_size, num_slots],
                                          seed=keep_seed).numpy(),
      "sampling": None,
  }
  if sampling:
    noise["sampling"] = philox_random.uniform_open_unit(
        [batch_size, num_slots, vocab_size], seeds[:, 1]).numpy()
  return noise


def _main_slots(model, objective):
  if objective == "electra":
    return tf1_names.tower_slots(model, "discriminator")
  network = model.discriminator_network
  return (tf1_names.embedding_slots(network.embedding_layer)
          + tf1_names.encoder_slots(network, tf1_names.TOWER_SCOPES[
              "discriminator"])
          + tf1_names.masked_lm_head_slots(model.main_mlm_head))


def _slot_values(slots, value_of):
  """`{tf1_name: array}` of `slots` (a column block: its columns)."""
  values = {}
  for slot in slots:
    value = np.asarray(value_of(slot.variable))
    values[slot.name] = value if slot.columns is None else value[
        ..., slot.columns]
  return values


def _hf_state(slots, value_of):
  values = _slot_values(slots, value_of)
  # The BERT baseline's main network is an `ElectraForMaskedLM`: its encoder
  # under the discriminator's names, its head under the generator's.
  state = {}
  for hf_tower in ("discriminator", "generator"):
    part = {name: value for name, value in values.items()
            if _tower_of(name) == hf_tower}
    if part:
      state.update(hf_names.to_hf_layout(part, hf_tower))
  return state


def _tower_of(tf1_name):
  if tf1_name.startswith("generator_predictions/") or tf1_name.startswith(
      "generator/"):
    return "generator"
  return "discriminator"


def hf_states(model, objective, value_of=None):
  """Our weights (or any per-variable values) in Hugging Face layout.

  Args:
    model: the pretrainer's `ElectraModel` (or the pretrainer: it holds the
      same parts).
    objective: `electra` or `mlm`.
    value_of: `variable -> array`; the variable's value by default (pass a
      lookup of gradients to map gradients).

  Returns:
    `{"main": state, "generator": state or None}`: `main` is the
    `ElectraForPreTraining` (`electra`) or `ElectraForMaskedLM` (`mlm`) state,
    `generator` the `ElectraForMaskedLM` state of the generator; each holds
    the shared embeddings.
  """
  check_objective(objective)
  value_of = value_of or (lambda variable: variable.numpy())
  states = {"main": _hf_state(_main_slots(model, objective), value_of),
            "generator": None}
  if objective == "electra":
    states["generator"] = _hf_state(tf1_names.tower_slots(model, "generator"),
                                    value_of)
  return states


def hf_configs(model, objective):
  """`{"main": config dict, "generator": config dict or None}` of the
  Hugging Face models `hf_states` fills."""
  check_objective(objective)
  discriminator, generator = electra_parts.model_configs(model)
  return {
      "main": hf_files.hf_config_from_encoder(
          discriminator,
          "discriminator" if objective == "electra" else "generator"),
      "generator": (None if objective == "mlm" else
                    hf_files.hf_config_from_encoder(generator, "generator")),
  }


def reference_names(states):
  """`{reference parameter name: array}` of `hf_states`'s output, under the
  names `torch_side.reference_parameters` gives (the shared embeddings
  under `main.` only; the tied output projection left out)."""
  named = {f"main.{name}": value for name, value in states["main"].items()}
  if states["generator"] is not None:
    named.update({f"generator.{name}": value
                  for name, value in states["generator"].items()
                  if not name.startswith("electra.embeddings.")})
  return named


# The fine-tuning reference's head (`finetuning_reference.ReferenceClassifier`):
# a torch `Linear` holds our dense kernel `[hidden, outputs]` transposed.
CLASSIFIER_PREFIX = "electra."
HEAD_WEIGHT, HEAD_BIAS = "classifier.weight", "classifier.bias"


def encoder_state(encoder, value_of=None):
  """Our `ElectraEncoder`'s weights (or per-variable values) under the
  discriminator's Hugging Face names (`electra.*`: an `ElectraModel`'s names
  under the prefix `CLASSIFIER_PREFIX`).

  Args:
    encoder: a built `ElectraEncoder`.
    value_of: `variable -> array`; the variable's value by default (pass a
      lookup of gradients to map gradients).
  """
  value_of = value_of or (lambda variable: variable.numpy())
  slots = (tf1_names.embedding_slots(encoder.embedding_layer)
           + tf1_names.encoder_slots(
               encoder, tf1_names.TOWER_SCOPES["discriminator"]))
  return hf_names.to_hf_layout(_slot_values(slots, value_of),
                               "discriminator")


def classifier_state(classifier, value_of=None):
  """Our `ElectraClassifier`'s weights (or per-variable values) under the
  fine-tuning reference's parameter names: the encoder's as
  `encoder_state`'s, the head's dense kernel and bias as `classifier.weight`
  (transposed) and `classifier.bias`.

  Args:
    classifier: a built `ElectraClassifier` on an `ElectraEncoder`.
    value_of: as `encoder_state`'s.

  Returns:
    `{reference parameter name: array}`.
  """
  value_of = value_of or (lambda variable: variable.numpy())
  state = encoder_state(classifier.encoder, value_of)
  dense = classifier.classification_head.dense
  state[HEAD_WEIGHT] = np.ascontiguousarray(
      np.asarray(value_of(dense.kernel)).T)
  state[HEAD_BIAS] = np.asarray(value_of(dense.bias))
  return state


def encoder_hf_config(encoder):
  """The Hugging Face config dict of our `ElectraEncoder` (as a
  discriminator)."""
  config = encoder_config.EncoderConfig.from_dict(
      {key: value for key, value in encoder.get_config().items()
       if key != "name"})
  return hf_files.hf_config_from_encoder(config, "discriminator")
