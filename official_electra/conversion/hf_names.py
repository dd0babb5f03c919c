"""TF1 names <-> names of Hugging Face `ElectraForPreTraining`/`ForMaskedLM`.

One table, used in both directions: `hf_name_map` lists, for the TF1 names of
one tower, the Hugging Face parameter each one is, and whether its value is
transposed (torch `Linear.weight` is `[out, in]`, a TF1 kernel `[in, out]`).
The discriminator file (`ElectraForPreTraining`) holds `electra.*` and
`discriminator_predictions.*`; the generator file (`ElectraForMaskedLM`) holds
the generator's encoder as `electra.*` (with the shared embeddings),
`generator_predictions.*` and `generator_lm_head.bias` (its weight is tied to
the word embeddings).
"""

import re

import numpy as np

# (TF1 prefix, Hugging Face prefix) per tower; the first match wins.
_PREFIXES = {
    "discriminator": (
        ("electra/", "electra."),
        ("discriminator_predictions/dense_1/",
         "discriminator_predictions.dense_prediction."),
        ("discriminator_predictions/", "discriminator_predictions."),
    ),
    "generator": (
        ("electra/embeddings/", "electra.embeddings."),
        ("generator/", "electra."),
        ("generator_predictions/output_bias", "generator_lm_head.bias"),
        ("generator_predictions/", "generator_predictions."),
    ),
}
# Last component of a TF1 name -> (Hugging Face name, transposed).
_LEAVES = {"kernel": ("weight", True), "bias": ("bias", False),
           "gamma": ("weight", False), "beta": ("bias", False)}
# Saved by some transformers versions; a buffer, not a weight.
IGNORED_HF_NAMES = frozenset({"electra.embeddings.position_ids"})
# Tied to the word embeddings in `ElectraForMaskedLM`.
TIED_OUTPUT_EMBEDDING = "generator_lm_head.weight"
WORD_EMBEDDINGS = "electra.embeddings.word_embeddings.weight"


def _hf_name(tf1_name, tower):
  for tf1_prefix, hf_prefix in _PREFIXES[tower]:
    if tf1_name.startswith(tf1_prefix):
      rest = tf1_name[len(tf1_prefix):]
      break
  else:
    raise ValueError(f"{tf1_name} is not part of the {tower}")
  if not rest:
    return hf_prefix, False
  *scopes, leaf = rest.split("/")
  scopes = [re.sub(r"^layer_(\d+)$", r"layer.\1", scope) for scope in scopes]
  if leaf.endswith("_embeddings"):
    return hf_prefix + ".".join(scopes + [leaf, "weight"]), False
  hf_leaf, transposed = _LEAVES[leaf]
  return hf_prefix + ".".join(scopes + [hf_leaf]), transposed


def hf_name_map(tf1_names, tower):
  """`{tf1_name: (hf_name, transposed)}` for the TF1 names of one tower.

  Args:
    tf1_names: TF1 names of `tower` (see `tf1_names.tower_slots`).
    tower: `discriminator` or `generator`.
  """
  return {name: _hf_name(name, tower) for name in tf1_names}


def to_hf_layout(tf1_values, tower):
  """`{hf_name: array}` of one tower's `{tf1_name: array}`: renamed, kernels
  transposed, every array contiguous (as safetensors stores it)."""
  return {hf_name: np.ascontiguousarray(
              tf1_values[tf1_name].T if transposed else tf1_values[tf1_name])
          for tf1_name, (hf_name, transposed)
          in hf_name_map(tf1_values, tower).items()}


def from_hf_layout(state, name_map):
  """`{tf1_name: array}` in TF1 layout of the Hugging Face `state`, for the
  names of `name_map` (`hf_name_map`'s)."""
  return {tf1_name: state[hf_name].T if transposed else state[hf_name]
          for tf1_name, (hf_name, transposed) in name_map.items()}
