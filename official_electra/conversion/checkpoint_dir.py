"""The directory a conversion writes, and reading one back (also train's).

An imported directory holds `ckpt-0.*` and `checkpoint` (written by a
`tf.train.CheckpointManager`, so `--init_checkpoint=DIR` finds it),
`vocab.txt` when a vocabulary was given, and `model_config.json`
(`modeling/model_config.py`): the towers imported, their heads, the
vocabulary's special-token ids and case. It has no pretraining section: an
import is no pretraining run, so pretraining starts from it with
`--init_checkpoint` into a new model_dir, and fine-tuning, the exports and
conversion read it like any model_dir.

Reading accepts any folder with a model config, so a training run's
model_dir converts too.
"""

import os

from official_electra import files
from official_electra.conversion import electra_parts
from official_electra.modeling import checkpoints
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import model_config as model_config_lib

VOCAB_FILE = checkpoints.VOCAB_FILE


def write_checkpoint_dir(model, output_dir, special_token_ids, vocab_file=None,
                         lower_case=True):
  """Writes `model`, its architecture and the vocabulary to a new `output_dir`.

  Everything is written to a temporary sibling folder first and renamed, so
  an interrupted run leaves no complete-looking directory.

  Args:
    model: A built model (`electra_parts.build_model`).
    output_dir: A path that does not exist yet (or an empty folder).
    special_token_ids: `{token: id}` recorded in `model_config.json`.
    vocab_file: Copied in as `vocab.txt` when given.
    lower_case: Whether the vocabulary is uncased (recorded there too).

  Returns:
    The checkpoint prefix, `<output_dir>/ckpt-0`.
  """
  electra_parts.check_new_output(output_dir)
  return checkpoints.write_checkpoint_folder(
      model, output_dir, electra_parts.model_config(
          *electra_parts.model_configs(model), special_token_ids, lower_case),
      vocab_file)


def read_config_file(path):
  """Reads an `EncoderConfig` JSON file."""
  try:
    return encoder_config_lib.EncoderConfig.from_dict(files.read_json(path))
  except OSError as error:
    raise electra_parts.ConversionError(
        f"cannot read {path} ({error.strerror}); pass an EncoderConfig JSON "
        "file") from None
  except (ValueError, TypeError) as error:
    raise electra_parts.ConversionError(
        f"{path}: not an EncoderConfig JSON ({error}); rewrite it from a "
        "valid config") from None


def read_configs(directory):
  """`(discriminator_config, generator_config)` of a checkpoint directory
  (from its model config; an absent tower is None)."""
  try:
    recorded = model_config_lib.require_model_config(
        directory, "official_electra.convert")
  except model_config_lib.ModelConfigError as error:
    raise electra_parts.ConversionError(str(error)) from None
  model = recorded.model
  if model.discriminator is not None and "discriminator" not in model.heads:
    raise electra_parts.ConversionError(
        f"{recorded.path}: the model has no replaced-token-detection head "
        f"(heads {list(model.heads)}); only ELECTRA checkpoints convert")
  if model.generator is not None and not model.tie_embeddings:
    raise electra_parts.ConversionError(
        f"{recorded.path}: the generator has its own embeddings (Two-Stage); "
        "the original's layout shares one block: only ELECTRA checkpoints "
        "with tied embeddings convert")
  return model.discriminator, model.generator


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
    model.restore(prefix)
  except checkpoints.CheckpointError as error:
    raise electra_parts.ConversionError(str(error)) from None
  return model
