"""Loading ELECTRA's towers from any checkpoint folder, and saving an encoder.

The one loader of fine-tuning, the efficiency study, the discriminator export
and the Python API (`official_electra.load_encoder`). It takes any folder of
the project's checkpoint layout (`checkpoints.py`) with its
`model_config.json` (`model_config.py`), which gives the architecture:
  - a pretraining model_dir (`official_electra.train`; its latest checkpoint),
  - a checkpoint prefix inside one (`DIR/ckpt-1000`),
  - a fine-tuned seed folder (`official_electra.finetune`, or
    `official_electra.save_classifier`; its encoder at `classifier/encoder`),
  - a converted import (`official_electra.convert`),
  - an encoder saved by `save_encoder` (the pretraining layout, no heads).
Anything else is one `CheckpointError` line naming the path and the fix.
"""

import dataclasses

import tensorflow as tf

from official_electra import files
from official_electra.modeling import checkpoints
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling.models import electra_model

TOWERS = ("discriminator", "generator")
_FOLDER_KINDS = ("a pretraining model_dir, a checkpoint prefix such as "
                 "DIR/ckpt-1000, a fine-tuned seed folder or a converted "
                 "import")


def load_model(path, towers=("discriminator",), heads=(), config=None):
  """Builds the towers and heads recorded beside a checkpoint and restores them.

  Args:
    path: any folder listed in the module docstring.
    towers: names of the towers to build (`TOWERS`).
    heads: heads to build as well (`model_config.HEAD_ATTRIBUTES`); each must
      be recorded in the folder's model config.
    config: the discriminator's `EncoderConfig` for a checkpoint that records
      no architecture (a bare prefix); by default the recorded one.

  Returns:
    `(ElectraModel, ModelConfig recorded or made from config, prefix read)`.

  Raises:
    checkpoints.CheckpointError: not a checkpoint folder, a tower or head
      it lacks, or weights that do not fit (one line, with the fix).
  """
  unknown = set(towers) - set(TOWERS)
  if unknown or not towers:
    raise ValueError(f"towers must be some of {TOWERS}, got {towers}")
  recorded = model_config_lib.read_model_config(path)
  if recorded is None and config is None:
    if not (model_config_lib.is_checkpoint_prefix(path) or files.isdir(path)):
      raise checkpoints.CheckpointError(
          f"{path}: no such checkpoint or folder; pass {_FOLDER_KINDS}")
    raise checkpoints.CheckpointError(
        f"{model_config_lib.folder_of(path)}: no "
        f"{model_config_lib.MODEL_CONFIG_FILE}, so not an ELECTRA checkpoint "
        f"folder; pass {_FOLDER_KINDS} (written by official_electra.train, "
        "finetune, convert or the Python API)")
  prefix = checkpoints.resolve_checkpoint(path)
  if recorded is None:
    recorded_model = model_config_lib.ModelConfig(discriminator=config)
  else:
    recorded_model = recorded.model
  selected = _select(recorded_model, towers, heads, path, config)
  model = electra_model.ElectraModel.from_config(selected).build()
  try:
    model.restore(prefix)
  except checkpoints.CheckpointError:
    if recorded is not None:
      raise
    raise checkpoints.CheckpointError(
        f"{prefix}: does not fit the configured architecture (no "
        f"{model_config_lib.MODEL_CONFIG_FILE} records its own); configure "
        "the architecture it was trained with") from None
  return model, recorded_model, prefix


def _select(recorded, towers, heads, path, config):
  """The part of `recorded` to build: `towers` and `heads` only."""
  for tower in towers:
    if getattr(recorded, tower) is None:
      raise checkpoints.CheckpointError(
          f"{path}: holds no {tower} (its {model_config_lib.MODEL_CONFIG_FILE}"
          f" records {', '.join(t for t in TOWERS if getattr(recorded, t))} "
          "only); load a tower it holds, or convert or train one with a "
          f"{tower}")
  missing = set(heads) - set(recorded.heads)
  if missing:
    raise checkpoints.CheckpointError(
        f"{path}: holds no {', '.join(sorted(missing))} head (heads: "
        f"{', '.join(recorded.heads) or 'none'}); load it without that head")
  discriminator = None
  if "discriminator" in towers:
    discriminator = config or recorded.discriminator
  return dataclasses.replace(
      recorded, discriminator=discriminator,
      generator=recorded.generator if "generator" in towers else None,
      heads=tuple(heads))


def load_encoder(path, tower="discriminator", config=None):
  """The restored `ElectraEncoder` of one tower of a checkpoint folder.

  Args:
    path: any folder listed in the module docstring.
    tower: `discriminator` (the network kept after pretraining) or
      `generator`.
    config: see `load_model`.

  Returns:
    A built `ElectraEncoder`; it maps `input_word_ids`, `input_mask`,
    `input_type_ids` (int32 `[batch, seq_len]`) to `sequence_output` (float32
    `[batch, seq_len, hidden]`) and `cls_output` (float32 `[batch, hidden]`).

  Raises:
    checkpoints.CheckpointError: as `load_model`.
  """
  model, _, _ = load_model(path, towers=(tower,), config=config)
  return getattr(model, f"{tower}_network")


def encoder_config_of(encoder):
  """The `EncoderConfig` of a built `ElectraEncoder`."""
  values = {key: value for key, value in encoder.get_config().items()
            if key != "name"}
  return encoder_config_lib.EncoderConfig.from_dict(values)


def check_new_folder(folder):
  """Raises `CheckpointError` when `folder` exists and is not empty."""
  if files.exists(folder) and (not files.isdir(folder) or
                               files.listdir(folder)):
    raise checkpoints.CheckpointError(
        f"{folder} already exists and is not empty; pass a new folder "
        "(nothing is overwritten)")


def save_encoder(encoder, folder, tokenizer, max_seq_length):
  """Writes an encoder as a discriminator in the pretraining layout.

  `folder` then holds `ckpt-0.*` and its `checkpoint` state file
  (`tf.train.Checkpoint(model=...)`, the encoder at
  `model/discriminator_network`), `model_config.json` (no heads) and
  `vocab.txt`: `official_electra.finetune --init_checkpoint`,
  `official_electra.export --model_dir` and `load_encoder` take it. Written
  to a staging folder and renamed, so a failed save leaves nothing.

  Args:
    encoder: a built `ElectraEncoder`.
    folder: a new (or empty) folder.
    tokenizer: the `WordpieceTokenizer` of the encoder's vocabulary.
    max_seq_length: the length raw text is packed to by default.

  Returns:
    The checkpoint prefix written, `<folder>/ckpt-0`.

  Raises:
    checkpoints.CheckpointError: `folder` is not new.
  """
  check_new_folder(folder)
  return checkpoints.write_checkpoint_folder(
      tf.train.Checkpoint(discriminator_network=encoder), folder,
      model_config_lib.ModelConfig(
          discriminator=encoder_config_of(encoder),
          special_token_ids=tokenizer.special_token_ids(),
          lower_case=tokenizer.lower_case, max_seq_length=max_seq_length),
      tokenizer.vocab_file)
