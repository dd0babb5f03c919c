"""Reads and writes Hugging Face ELECTRA model directories without torch.

A directory holds `config.json` and `model.safetensors` (or, when reading,
`pytorch_model.bin`, which needs torch). `config.json` carries the
architecture; only what `EncoderConfig` expresses is accepted: absolute
positions and the exact (erf) GELU. A released directory also carries its
tokenizer: `vocab.txt` and `tokenizer_config.json` (`do_lower_case`).
"""

import json
import os

import numpy as np
import safetensors
import safetensors.numpy

from official_electra import errors
from official_electra import files
from official_electra.conversion import electra_parts
from official_electra.conversion import hf_names
from official_electra.conversion import tf1_names
from official_electra.modeling import encoder_config as encoder_config_lib

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
PYTORCH_FILE = "pytorch_model.bin"
VOCAB_FILE = "vocab.txt"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
ARCHITECTURES = {"discriminator": "ElectraForPreTraining",
                 "generator": "ElectraForMaskedLM"}
# EncoderConfig field -> Hugging Face ElectraConfig field.
_CONFIG_FIELDS = {
    "vocab_size": "vocab_size",
    "embedding_size": "embedding_size",
    "hidden_size": "hidden_size",
    "num_layers": "num_hidden_layers",
    "num_attention_heads": "num_attention_heads",
    "intermediate_size": "intermediate_size",
    "max_position_embeddings": "max_position_embeddings",
    "type_vocab_size": "type_vocab_size",
    "dropout_rate": "hidden_dropout_prob",
    "attention_dropout_rate": "attention_probs_dropout_prob",
    "initializer_range": "initializer_range",
    "layer_norm_epsilon": "layer_norm_eps",
}


def encoder_config_from_hf(hf_config, path):
  """The `EncoderConfig` of a Hugging Face ELECTRA `config.json` dict."""
  unsupported = []
  if hf_config.get("model_type", "electra") != "electra":
    unsupported.append(f"model_type {hf_config['model_type']!r}")
  if hf_config.get("hidden_act", "gelu") != "gelu":
    unsupported.append(f"hidden_act {hf_config['hidden_act']!r} (only the "
                       "exact 'gelu')")
  if hf_config.get("position_embedding_type", "absolute") != "absolute":
    unsupported.append("position_embedding_type "
                       f"{hf_config['position_embedding_type']!r}")
  missing = [hf_field for hf_field in _CONFIG_FIELDS.values()
             if hf_field not in hf_config]
  if missing:
    unsupported.append(f"missing fields {', '.join(missing)}")
  if unsupported:
    raise electra_parts.ConversionError(
        f"{path}: not an ELECTRA config this project can represent "
        f"({'; '.join(unsupported)}); pass an ElectraForPreTraining or "
        "ElectraForMaskedLM directory")
  return encoder_config_lib.EncoderConfig.from_dict(
      {field: hf_config[hf_field]
       for field, hf_field in _CONFIG_FIELDS.items()})


def hf_config_from_encoder(config, tower):
  """A Hugging Face `config.json` dict for one tower."""
  hf_config = {hf_field: getattr(config, field)
               for field, hf_field in _CONFIG_FIELDS.items()}
  hf_config.update({
      "architectures": [ARCHITECTURES[tower]],
      "model_type": "electra",
      "hidden_act": "gelu",
      "position_embedding_type": "absolute",
      "pad_token_id": 0,
      "torch_dtype": "float32",
  })
  return hf_config


def read_hf_dir(path):
  """Reads a Hugging Face ELECTRA directory.

  Returns:
    `(hf_config dict, {name: float32 numpy array})`.

  Raises:
    ConversionError: when the directory, config or weights file is missing or
      unreadable.
  """
  config_path = os.path.join(path, CONFIG_FILE)
  if not os.path.isfile(config_path):
    raise electra_parts.ConversionError(
        f"{config_path}: no such file; pass a Hugging Face model directory "
        "(config.json with model.safetensors or pytorch_model.bin)")
  try:
    with open(config_path) as config_file:
      hf_config = json.load(config_file)
  except ValueError as error:
    raise electra_parts.ConversionError(
        f"{config_path}: not valid JSON ({error})") from None
  safetensors_path = os.path.join(path, SAFETENSORS_FILE)
  pytorch_path = os.path.join(path, PYTORCH_FILE)
  if os.path.isfile(safetensors_path):
    try:
      state = safetensors.numpy.load_file(safetensors_path)
    except (OSError, safetensors.SafetensorError) as error:
      raise electra_parts.ConversionError(
          f"{safetensors_path}: unreadable ({error})") from None
  elif os.path.isfile(pytorch_path):
    state = _read_pytorch_file(pytorch_path)
  else:
    raise electra_parts.ConversionError(
        f"{path}: neither {SAFETENSORS_FILE} nor {PYTORCH_FILE} is there; "
        "pass a Hugging Face model directory (sharded checkpoints: save the "
        "model again with save_pretrained(max_shard_size='10GB'))")
  return hf_config, {name: np.asarray(value, np.float32)
                     for name, value in state.items()}


def read_tokenizer_files(path):
  """`(vocab_file, lower_case)` of a Hugging Face directory's tokenizer.

  Returns:
    Its `vocab.txt` path and its `tokenizer_config.json`'s `do_lower_case`;
    None for each the directory does not have.

  Raises:
    ConversionError: `tokenizer_config.json` is not JSON, or its
      `do_lower_case` is not true or false.
  """
  vocab_file = os.path.join(path, VOCAB_FILE)
  config_path = os.path.join(path, TOKENIZER_CONFIG_FILE)
  lower_case = None
  if os.path.isfile(config_path):
    try:
      with open(config_path) as config_file:
        lower_case = json.load(config_file).get("do_lower_case")
    except (ValueError, AttributeError) as error:
      raise electra_parts.ConversionError(
          f"{config_path}: not a tokenizer config ({error}); fix it or pass "
          "--lower_case / --nolower_case") from None
    if lower_case not in (True, False, None):
      raise electra_parts.ConversionError(
          f"{config_path}: do_lower_case is {lower_case!r}, not true or "
          "false; fix it or pass --lower_case / --nolower_case")
  return (vocab_file if os.path.isfile(vocab_file) else None), lower_case


def _read_pytorch_file(path):
  try:
    import torch  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise electra_parts.ConversionError(
        f"{path}: reading pytorch_model.bin needs torch (pip install torch), "
        "or save the model with safetensors") from None
  try:
    state = torch.load(path, map_location="cpu", weights_only=True)
  except Exception as error:  # pylint: disable=broad-except
    raise electra_parts.ConversionError(
        f"{path}: unreadable ({errors.first_line(error)})") from None
  return {name: value.float().numpy() for name, value in state.items()}


def hf_state_to_tf1(state, tf1_name_list, tower, path):
  """Renames one tower's Hugging Face state dict to TF1 names.

  Args:
    state: `{hf_name: array}` of an `ElectraForPreTraining` (discriminator)
      or `ElectraForMaskedLM` (generator).
    tf1_name_list: The TF1 names the tower must provide.
    tower: `discriminator` or `generator`.
    path: The directory, for error messages.

  Returns:
    `{tf1_name: array}` in TF1 layout.

  Raises:
    ConversionError: listing missing and unexpected parameters, or when the
      generator's output embedding is not tied to its word embeddings.
  """
  name_map = hf_names.hf_name_map(tf1_name_list, tower)
  state = dict(state)
  if tower == "generator" and hf_names.TIED_OUTPUT_EMBEDDING in state:
    output_embedding = state.pop(hf_names.TIED_OUTPUT_EMBEDDING)
    word_embeddings = state.get(hf_names.WORD_EMBEDDINGS)
    if word_embeddings is not None and not np.array_equal(output_embedding,
                                                          word_embeddings):
      raise electra_parts.ConversionError(
          f"{path}: {hf_names.TIED_OUTPUT_EMBEDDING} differs from the word "
          "embeddings; ELECTRA ties them (tie_word_embeddings=True), so this "
          "model cannot be represented")
  expected = {hf_name for hf_name, _ in name_map.values()}
  electra_parts.raise_if_mismatched(
      f"{path} is not the {ARCHITECTURES[tower]} its config.json describes; "
      f"pass an {ARCHITECTURES[tower]} directory saved with save_pretrained:",
      expected - set(state), set(state) - expected - hf_names.IGNORED_HF_NAMES,
      [])
  return hf_names.from_hf_layout(state, name_map)


def write_hf_dir(model, tower, output_dir):
  """Writes one tower of `model` as a Hugging Face directory.

  `from_pretrained` of `ElectraForPreTraining` (discriminator) or
  `ElectraForMaskedLM` (generator) loads it. Written to a staging folder and
  published (`files.publish_folder`: one rename locally; on `gs://`,
  `config.json` copied last).
  """
  electra_parts.check_new_output(output_dir)
  configs = dict(zip(("discriminator", "generator"),
                     electra_parts.model_configs(model)))
  if configs[tower] is None:
    raise electra_parts.ConversionError(
        f"the checkpoint holds no {tower}; it cannot be written as "
        f"{ARCHITECTURES[tower]}")
  weights = tf1_names.read_weights(model)
  state = hf_names.to_hf_layout(
      {slot.name: weights[slot.name]
       for slot in tf1_names.tower_slots(model, tower)}, tower)
  write_hf_folder(output_dir, state,
                  hf_config_from_encoder(configs[tower], tower))


def write_hf_folder(output_dir, state, hf_config):
  """`model.safetensors` of `state` and `config.json` of `hf_config`, written
  to a staging folder and published (`files.publish_folder`: one rename
  locally; on `gs://`, `config.json` copied last)."""
  staging = files.staging_folder(output_dir)
  try:
    files.write_bytes(os.path.join(staging, SAFETENSORS_FILE),
                      safetensors.numpy.save(state, metadata={"format": "pt"}))
    files.write_json(os.path.join(staging, CONFIG_FILE), hf_config)
    files.publish_folder(staging, output_dir, last=CONFIG_FILE)
  except BaseException:
    files.remove_tree(staging)
    raise
