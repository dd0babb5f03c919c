"""Our variables under the original's TF1 names (ELECTRA_REFERENCE.md §5).

The TF1 names are the project's interchange names: the TF1 reader and writer
use them directly and the Hugging Face names are derived from them
(`hf_names.py`). Values keep the TF1 layout (kernels `[in, out]`). Our fused
`attention_qkv` kernel `[H, 3H]` is the original's `query | key | value`
kernels side by side, so each of those three names is a column block of it.
"""

import collections

import numpy as np

from official_electra.conversion import electra_parts

# One TF1 variable: `columns` is the block of the last axis of `variable` it
# occupies, or None for the whole variable.
Slot = collections.namedtuple("Slot", ["name", "variable", "columns"])

# Prefix of each tower's encoder in the TF1 names; embeddings are always
# `electra/embeddings` (shared by both towers).
TOWER_SCOPES = {"discriminator": "electra", "generator": "generator"}
EMBEDDINGS_SCOPE = "electra/embeddings"


def _dense_slots(scope, dense):
  return [Slot(f"{scope}/kernel", dense.kernel, None),
          Slot(f"{scope}/bias", dense.bias, None)]


def _layer_norm_slots(scope, layer_norm):
  return [Slot(f"{scope}/gamma", layer_norm.gamma, None),
          Slot(f"{scope}/beta", layer_norm.beta, None)]


def embedding_slots(embedding_layer):
  """Slots of the shared embedding block."""
  return [
      Slot(f"{EMBEDDINGS_SCOPE}/word_embeddings",
           embedding_layer.word_embeddings, None),
      Slot(f"{EMBEDDINGS_SCOPE}/token_type_embeddings",
           embedding_layer.token_type_embeddings, None),
      Slot(f"{EMBEDDINGS_SCOPE}/position_embeddings",
           embedding_layer.position_embeddings, None),
  ] + _layer_norm_slots(f"{EMBEDDINGS_SCOPE}/LayerNorm",
                        embedding_layer.layer_norm)


def encoder_slots(encoder, scope):
  """Slots of an `ElectraEncoder` without its embedding block."""
  slots = []
  if encoder.embedding_projection is not None:
    slots += _dense_slots(f"{scope}/embeddings_project",
                          encoder.embedding_projection)
  hidden_size = encoder.hidden_size
  for index, block in enumerate(encoder.transformer_layers):
    layer = f"{scope}/encoder/layer_{index}"
    for position, part in enumerate(("query", "key", "value")):
      columns = slice(position * hidden_size, (position + 1) * hidden_size)
      slots.append(Slot(f"{layer}/attention/self/{part}/kernel",
                        block.attention_qkv.kernel, columns))
      slots.append(Slot(f"{layer}/attention/self/{part}/bias",
                        block.attention_qkv.bias, columns))
    slots += _dense_slots(f"{layer}/attention/output/dense",
                          block.attention_output)
    slots += _layer_norm_slots(f"{layer}/attention/output/LayerNorm",
                               block.attention_layer_norm)
    slots += _dense_slots(f"{layer}/intermediate/dense", block.intermediate)
    slots += _dense_slots(f"{layer}/output/dense", block.output_dense)
    slots += _layer_norm_slots(f"{layer}/output/LayerNorm",
                               block.output_layer_norm)
  return slots


def tower_slots(model, tower):
  """Slots of one tower (`discriminator` or `generator`) with its head.

  The shared embedding block is listed with both towers. Empty when `model`
  lacks the tower.
  """
  network = getattr(model, f"{tower}_network", None)
  if network is None:
    return []
  head = getattr(model, f"{tower}_head")
  slots = embedding_slots(network.embedding_layer)
  slots += encoder_slots(network, TOWER_SCOPES[tower])
  if tower == "discriminator":
    slots += _dense_slots("discriminator_predictions/dense", head.dense)
    slots += _dense_slots("discriminator_predictions/dense_1",
                          head.dense_prediction)
  else:
    slots += masked_lm_head_slots(head)
  return slots


def masked_lm_head_slots(head):
  """Slots of a `MaskedLMHead` under the generator head's TF1 names (the
  generator's, or the BERT baseline's main network's `main_mlm_head`)."""
  return (_dense_slots("generator_predictions/dense", head.dense)
          + _layer_norm_slots("generator_predictions/LayerNorm",
                              head.layer_norm)
          + [Slot("generator_predictions/output_bias", head.output_bias,
                  None)])


def model_slots(model):
  """Every slot of `model`, each name once."""
  slots = {}
  for tower in TOWER_SCOPES:
    for slot in tower_slots(model, tower):
      slots.setdefault(slot.name, slot)
  return list(slots.values())


def slot_shape(slot):
  shape = list(slot.variable.shape)
  if slot.columns is not None:
    shape[-1] = slot.columns.stop - slot.columns.start
  return tuple(shape)


def read_slots(slots):
  """`{tf1_name: numpy array}` of `slots` (a column block: its columns)."""
  weights = {}
  for slot in slots:
    value = slot.variable.numpy()
    weights[slot.name] = value if slot.columns is None else (
        value[..., slot.columns])
  return weights


def assign_slots(slots, weights):
  """Sets the variables of `slots` from `{tf1_name: array}` (TF1 layout,
  every name present with its slot's shape: callers check first).

  The column blocks of one variable (query | key | value of the fused
  `attention_qkv`) are concatenated in column order.
  """
  blocks = collections.defaultdict(list)
  for slot in slots:
    blocks[id(slot.variable)].append(slot)
  for variable_slots in blocks.values():
    variable = variable_slots[0].variable
    if variable_slots[0].columns is None:
      value = weights[variable_slots[0].name]
    else:
      ordered = sorted(variable_slots, key=lambda slot: slot.columns.start)
      value = np.concatenate([weights[slot.name] for slot in ordered], axis=-1)
    variable.assign(np.asarray(value, variable.dtype.as_numpy_dtype))


def read_weights(model):
  """`{tf1_name: float32 numpy array}` of every variable of `model`."""
  return read_slots(model_slots(model))


def assign_weights(model, weights, source):
  """Sets every variable of `model` from `{tf1_name: array}`, or none at all.

  Args:
    model: A built model (see `electra_parts.build_model`).
    weights: TF1-named arrays in TF1 layout; must hold exactly the model's
      names, with the model's shapes.
    source: What the weights were read from, for error messages.

  Raises:
    ConversionError: listing the missing, unexpected and mis-shaped names;
      no variable is changed then.
  """
  slots = model_slots(model)
  expected = {slot.name for slot in slots}
  mismatched = [f"{slot.name} {tuple(np.shape(weights[slot.name]))} vs "
                f"{slot_shape(slot)}" for slot in slots if slot.name in weights
                and tuple(np.shape(weights[slot.name])) != slot_shape(slot)]
  electra_parts.raise_if_mismatched(
      f"{source} does not fit the configured model; pass the config (model "
      "size, hidden size, layers, generator size) it was trained with:",
      expected - set(weights), set(weights) - expected, mismatched)
  assign_slots(slots, weights)
