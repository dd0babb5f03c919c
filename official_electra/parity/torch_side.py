"""The reference's side of the parity checks: PyTorch models holding our
weights, and our batches and noise as the reference's tensors.

Needs torch and transformers (requirements-test.txt); `official_electra.parity`
says so in one line when they are missing.
"""

import numpy as np
import torch
import transformers

from official_electra.parity import finetuning_reference
from official_electra.parity import ours
from official_electra.parity import reference

# Buffers and tied weights a state of ours does not (and need not) hold.
_NOT_IN_OUR_STATE = ("electra.embeddings.position_ids",
                     "generator_lm_head.weight")


def _hf_model(architecture, config, state):
  model = architecture(transformers.ElectraConfig(**config))
  missing, unexpected = model.load_state_dict(
      {name: torch.from_numpy(np.array(value, np.float32))
       for name, value in state.items()}, strict=False)
  missing = [name for name in missing if name not in _NOT_IN_OUR_STATE]
  if missing or unexpected:
    raise ValueError(f"our weights do not fill {architecture.__name__}: "
                     f"missing {missing}, unexpected {unexpected}")
  return model


def build_reference(model, settings):
  """A `reference.ReferencePretraining` whose networks hold `model`'s current
  weights (our `ElectraModel` or pretrainer), in training mode."""
  objective = settings.objective
  states = ours.hf_states(model, objective)
  configs = ours.hf_configs(model, objective)
  if objective == "electra":
    main = _hf_model(transformers.ElectraForPreTraining, configs["main"],
                     states["main"])
    generator = _hf_model(transformers.ElectraForMaskedLM,
                          configs["generator"], states["generator"])
  else:
    main = _hf_model(transformers.ElectraForMaskedLM, configs["main"],
                     states["main"])
    generator = None
  return reference.ReferencePretraining(settings, main, generator).train()


def reference_encoder(encoder):
  """A `transformers.ElectraModel` holding our `ElectraEncoder`'s current
  weights (its dropout rates as the encoder's config says)."""
  prefix = ours.CLASSIFIER_PREFIX
  return _hf_model(transformers.ElectraModel,
                   ours.encoder_hf_config(encoder),
                   {name[len(prefix):]: value
                    for name, value in ours.encoder_state(encoder).items()})


def build_reference_classifier(classifier, dropout_rate):
  """A `finetuning_reference.ReferenceClassifier` holding our
  `ElectraClassifier`'s current weights, in training mode, its head's
  dropout at `dropout_rate`."""
  model = finetuning_reference.ReferenceClassifier(
      reference_encoder(classifier.encoder), classifier.num_outputs,
      dropout_rate)
  state = ours.classifier_state(classifier)
  with torch.no_grad():
    for name in (ours.HEAD_WEIGHT, ours.HEAD_BIAS):
      model.get_parameter(name).copy_(torch.from_numpy(
          np.array(state[name], np.float32)))
  return model.train()


def reference_parameters(pretraining):
  """`(name, parameter)` of the reference's trainable parameters, each once
  (the shared embeddings under `main.`)."""
  return list(pretraining.named_parameters())


def torch_batch(batch):
  """Our batch (`input_word_ids`, `input_mask`, `input_type_ids`; tensors or
  arrays) as the reference's int64 tensors."""
  def tensor(value):
    return torch.from_numpy(np.asarray(value).astype(np.int64))
  return {"input_ids": tensor(batch["input_word_ids"]),
          "input_mask": tensor(batch["input_mask"]),
          "token_type_ids": tensor(batch["input_type_ids"])}


def torch_noise(noise):
  """`ours.noise_of_seeds`'s arrays as a `reference.Noise`."""
  def tensor(value):
    return None if value is None else torch.from_numpy(
        np.asarray(value, np.float32))
  return reference.Noise(tensor(noise["position"]), tensor(noise["mask"]),
                         tensor(noise["sampling"]))
