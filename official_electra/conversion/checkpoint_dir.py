"""The directory a conversion writes, and reading one back (also train's).

An imported directory holds `ckpt-0.*` and `checkpoint` (written by a
`tf.train.CheckpointManager`, so `--init_checkpoint=DIR` finds it),
`vocab.txt` when a vocabulary was given, and the architecture:

- with both towers, whose generator is sized from the discriminator's config
  by a width and depth fraction as the original sizes it (as every ELECTRA
  model; `EncoderConfig.scaled`), `architecture.json` in the format
  `official_electra.train` writes (`training/architecture.py`): the
  directory is then a pretraining model_dir like any other;
- otherwise `encoder_config.json` (the discriminator's `EncoderConfig`) and/or
  `generator_config.json` (the generator's).

Reading accepts either, so a training run's model_dir exports too.
"""

import json
import os
import shutil
import tempfile

import tensorflow as tf

from official_electra.conversion import electra_parts
from official_electra.modeling import checkpoints
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.training import architecture as architecture_lib

DISCRIMINATOR_CONFIG_FILE = checkpoints.ENCODER_CONFIG_FILE
GENERATOR_CONFIG_FILE = "generator_config.json"
VOCAB_FILE = "vocab.txt"
# Settings of architecture.json that are not weights: the paper's masking
# rate; the sequence length is the longest the position table allows.
_MASK_PROB = 0.15


def pretraining_architecture(discriminator_config, generator_config,
                             special_token_ids, lower_case):
  """The training `PretrainingArchitecture` of two towers, or None.

  None when a tower is absent or the generator is not what
  `EncoderConfig.scaled` (the original's `get_generator_config`) makes of the
  discriminator's config at some width and depth fraction.
  """
  if discriminator_config is None or generator_config is None:
    return None
  hidden_fraction = (generator_config.hidden_size /
                     discriminator_config.hidden_size)
  layers_fraction = (generator_config.num_layers /
                     discriminator_config.num_layers)
  if not (0 < hidden_fraction <= 1 and 0 < layers_fraction <= 1):
    return None
  if discriminator_config.scaled(hidden_fraction,
                                 layers_fraction) != generator_config:
    return None
  return architecture_lib.PretrainingArchitecture(
      encoder=discriminator_config, generator_hidden_fraction=hidden_fraction,
      generator_layers_fraction=layers_fraction, objective="electra",
      uniform_generator=False,
      max_seq_length=discriminator_config.max_position_embeddings,
      mask_prob=_MASK_PROB, special_token_ids=dict(special_token_ids),
      lower_case=lower_case)


def write_checkpoint_dir(model, output_dir, special_token_ids, vocab_file=None,
                         lower_case=True):
  """Writes `model`, its architecture and the vocabulary to a new `output_dir`.

  Everything is written to a temporary sibling folder first and renamed, so
  an interrupted run leaves no complete-looking directory.

  Args:
    model: A built model (`electra_parts.build_model`).
    output_dir: A path that does not exist yet (or an empty folder).
    special_token_ids: `{token: id}` recorded in `architecture.json`.
    vocab_file: Copied in as `vocab.txt` when given.
    lower_case: Whether the vocabulary is uncased (for `architecture.json`).

  Returns:
    The checkpoint prefix, `<output_dir>/ckpt-0`.
  """
  electra_parts.check_new_output(output_dir)
  parent = os.path.dirname(os.path.abspath(output_dir))
  os.makedirs(parent, exist_ok=True)
  staging = tempfile.mkdtemp(prefix=".converting-", dir=parent)
  try:
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model), staging, max_to_keep=1)
    manager.save(checkpoint_number=0)
    configs = electra_parts.model_configs(model)
    architecture = pretraining_architecture(*configs, special_token_ids,
                                            lower_case)
    if architecture is not None:
      architecture_lib.write_architecture(staging, architecture)
    else:
      for config, file_name in zip(configs, (DISCRIMINATOR_CONFIG_FILE,
                                             GENERATOR_CONFIG_FILE)):
        if config is not None:
          with open(os.path.join(staging, file_name), "w") as config_file:
            config_file.write(config.to_json() + "\n")
    if vocab_file is not None:
      shutil.copyfile(vocab_file, os.path.join(staging, VOCAB_FILE))
    os.replace(staging, output_dir)
  except BaseException:
    shutil.rmtree(staging, ignore_errors=True)
    raise
  return os.path.join(output_dir, "ckpt-0")


def read_config_file(path):
  """Reads an `EncoderConfig` JSON file."""
  try:
    with open(path) as config_file:
      return encoder_config_lib.EncoderConfig.from_dict(json.load(config_file))
  except OSError as error:
    raise electra_parts.ConversionError(
        f"cannot read {path} ({error.strerror}); pass an EncoderConfig JSON "
        "file") from None
  except (ValueError, TypeError) as error:
    raise electra_parts.ConversionError(
        f"{path}: not an EncoderConfig JSON ({error}); rewrite it from a "
        "valid config") from None


def read_configs(directory):
  """`(discriminator_config, generator_config)` of a checkpoint directory.

  Reads `architecture.json` (written by training or by an import), else
  `encoder_config.json` / `generator_config.json`; an absent tower is None.
  """
  architecture_path = os.path.join(directory,
                                   architecture_lib.ARCHITECTURE_FILE)
  if os.path.isfile(architecture_path):
    try:
      architecture = architecture_lib.read_architecture(directory)
    except (ValueError, TypeError, KeyError) as error:
      raise electra_parts.ConversionError(
          f"{architecture_path}: unreadable ({error})") from None
    if architecture.objective not in ("electra", "electra_15"):
      raise electra_parts.ConversionError(
          f"{architecture_path}: objective {architecture.objective!r} has no "
          "replaced-token-detection head; only ELECTRA checkpoints convert")
    return architecture.encoder, architecture.generator_config()
  paths = [os.path.join(directory, file_name) for file_name in
           (DISCRIMINATOR_CONFIG_FILE, GENERATOR_CONFIG_FILE)]
  configs = tuple(read_config_file(path) if os.path.isfile(path) else None
                  for path in paths)
  if configs == (None, None):
    raise electra_parts.ConversionError(
        f"{directory} has no {architecture_lib.ARCHITECTURE_FILE}, "
        f"{DISCRIMINATOR_CONFIG_FILE} or {GENERATOR_CONFIG_FILE}; pass a "
        "directory written by official_electra.convert or "
        "official_electra.train")
  return configs


def load_checkpoint_dir(path):
  """Builds the model described beside a checkpoint and restores every variable.

  Args:
    path: A checkpoint directory (its latest checkpoint), or a checkpoint
      prefix inside one.

  Returns:
    The restored model (see `electra_parts.build_model`).

  Raises:
    ConversionError: when the architecture is missing or a variable is absent
      or of another shape in the checkpoint.
  """
  try:
    prefix = checkpoints.resolve_checkpoint(path)
  except checkpoints.CheckpointError as error:
    raise electra_parts.ConversionError(str(error)) from None
  model = electra_parts.build_model(*read_configs(os.path.dirname(prefix)))
  try:
    status = tf.train.Checkpoint(model=model).read(prefix)
    status.assert_existing_objects_matched()
  except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as error:
    raise electra_parts.ConversionError(
        f"{prefix} does not fit the architecture beside it "
        f"({checkpoints.first_line(error)}); check that the JSON files belong "
        "to this checkpoint") from None
  status.expect_partial()
  return model
