"""What an ELECTRA checkpoint holds, recorded in one file beside it.

Every folder with a checkpoint (a pretraining model_dir, a conversion's
output, a fine-tuning model_dir) keeps `model_config.json`:

```
{"format": "official_electra.model_config", "version": 1,
 "model": {...},          # ModelConfig: the weights, and how to feed them
 "pretraining": {...},    # the procedure that trained them (pretraining only)
 "finetuned": {...}}      # the task's head and how to feed it (fine-tuned
                          # seed folders only: finetuned_checkpoint.py)
```

`model` is a `ModelConfig`: the discriminator's and the generator's
`EncoderConfig` (either may be absent), whether they share one embedding
block, which heads exist, the vocabulary's special-token ids, whether it is
uncased and the sequence length the model was trained at (the length the
export's text signatures pack to). It is enough to build the weights-only
`ElectraModel` and restore any checkpoint of the folder, so fine-tuning,
both exports and conversion read nothing else. `pretraining` holds the
settings of the procedure (objective, generator fractions, masking rate,
sampler) that `official_electra.train` checks when it resumes; the model
section never depends on it.
"""

import dataclasses
import json
import os
from typing import Optional

import tensorflow as tf

from official_electra import files
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import errors
from official_electra.modeling import objectives

MODEL_CONFIG_FILE = "model_config.json"
FORMAT = "official_electra.model_config"
VERSION = 1
# The settings of the pretraining section.
PRETRAINING_KEYS = ("objective", "generator_hidden_fraction",
                    "generator_layers_fraction", "generator_sizing",
                    "uniform_generator", "unigram_generator", "mask_prob",
                    "masking_scheme")

# Heads an `ElectraModel` may hold, by name, and the attribute (checkpoint
# key) each lives at:
#   discriminator: replaced-token detection on the discriminator;
#   generator: the generator's masked LM (tied to its input embeddings);
#   mlm: a masked LM on the discriminator network (the MLM baseline, the
#     Section 3.2 ablations, Two-Stage's first stage);
#   copy: All-Tokens MLM's copy probability;
#   reinforce_baseline: Adversarial ELECTRA's learned REINFORCE baseline.
HEAD_ATTRIBUTES = {
    "discriminator": "discriminator_head",
    "generator": "generator_head",
    "mlm": "main_mlm_head",
    "copy": "copy_head",
    "reinforce_baseline": "baseline_head",
}
# BERT's uncased vocabulary's ids, for a model imported without a vocabulary.
BERT_SPECIAL_TOKEN_IDS = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102,
                          "[MASK]": 103}


class ModelConfigError(errors.CheckpointError):
  """A model config file is missing, unreadable or inconsistent."""


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  """The weights of an ELECTRA checkpoint, and how to feed them.

  Attributes:
    discriminator: the discriminator's (main network's) `EncoderConfig`, or
      None for a generator-only import.
    generator: the generator's `EncoderConfig`, or None.
    tie_embeddings: whether the two towers share one embedding block (all
      but Two-Stage, whose towers have their own).
    heads: names of the heads present (keys of `HEAD_ATTRIBUTES`), sorted.
    special_token_ids: ids of `[PAD] [UNK] [CLS] [SEP] [MASK]`.
    lower_case: whether the vocabulary is uncased (text lower-cased and
      accents stripped before WordPiece).
    max_seq_length: tokens per sequence in training; the export's text
      signatures pack to it.
  """
  discriminator: Optional[encoder_config_lib.EncoderConfig]
  generator: Optional[encoder_config_lib.EncoderConfig] = None
  tie_embeddings: bool = True
  heads: tuple = ()
  special_token_ids: dict = dataclasses.field(
      default_factory=lambda: dict(BERT_SPECIAL_TOKEN_IDS))
  lower_case: bool = True
  max_seq_length: int = 128

  def __post_init__(self):
    if self.discriminator is None and self.generator is None:
      raise ModelConfigError("a model config needs a discriminator or a "
                             "generator")
    object.__setattr__(self, "heads", tuple(sorted(set(self.heads))))
    check_heads(self.heads, self.discriminator is not None,
                self.generator is not None)
    missing = {"[PAD]", "[CLS]", "[SEP]", "[MASK]"} - set(
        self.special_token_ids)
    if missing:
      raise ModelConfigError(f"special_token_ids lacks {sorted(missing)}")

  @property
  def main(self):
    """The config of the main network (the discriminator when present)."""
    return self.discriminator or self.generator

  def to_dict(self):
    values = dataclasses.asdict(self)
    values["heads"] = list(self.heads)
    return values

  @classmethod
  def from_dict(cls, values):
    values = dict(values)
    for key in ("discriminator", "generator"):
      if values.get(key) is not None:
        values[key] = encoder_config_lib.EncoderConfig.from_dict(values[key])
    values["heads"] = tuple(values.get("heads", ()))
    unknown = set(values) - {field.name for field in dataclasses.fields(cls)}
    if unknown:
      raise ModelConfigError(f"unknown model config fields {sorted(unknown)}")
    return cls(**values)


def check_heads(heads, has_discriminator, has_generator):
  """Raises `ModelConfigError` unless every head is known and its tower is
  there (the generator's head needs a generator, all others a
  discriminator)."""
  unknown = set(heads) - set(HEAD_ATTRIBUTES)
  if unknown:
    raise ModelConfigError(f"unknown heads {sorted(unknown)}; known: "
                           f"{sorted(HEAD_ATTRIBUTES)}")
  if "generator" in heads and not has_generator:
    raise ModelConfigError("a generator head needs a generator")
  discriminator_heads = set(heads) - {"generator"}
  if discriminator_heads and not has_discriminator:
    raise ModelConfigError(f"heads {sorted(discriminator_heads)} need a "
                           "discriminator")


def pretraining_model_config(encoder, objective, generator_hidden_fraction,
                             generator_layers_fraction, uniform_generator,
                             unigram_generator, special_token_ids, lower_case,
                             max_seq_length):
  """The `ModelConfig` of the model a pretraining run with these settings
  trains: the towers and heads of the objective's spec (`objectives`)."""
  spec = objectives.get(objective)
  generator = spec.generator_config(
      encoder, generator_hidden_fraction, generator_layers_fraction,
      uniform_generator, unigram_generator)
  return ModelConfig(
      discriminator=encoder, generator=generator,
      tie_embeddings=spec.ties_embeddings,
      heads=spec.heads(generator is not None),
      special_token_ids=dict(special_token_ids), lower_case=lower_case,
      max_seq_length=max_seq_length)


@dataclasses.dataclass(frozen=True)
class RecordedConfig:
  """What a folder records: its `ModelConfig`, the pretraining settings
  (a dict, or None when no pretraining run wrote the folder), the file
  they came from, and a fine-tuned folder's head (`finetuned`: the task
  family's description, `finetuned_checkpoint.py`; None otherwise)."""
  model: ModelConfig
  pretraining: Optional[dict]
  path: str
  finetuned: Optional[dict] = None


def is_checkpoint_prefix(path):
  """Whether `path` names a checkpoint (`path.index` exists).

  Asked before "is it a folder?": some filesystems (`ram://`) call any
  prefix of a file's path a folder, `DIR/ckpt-4` of `DIR/ckpt-4.index` too.
  """
  return tf.io.gfile.exists(path + ".index")


def folder_of(path):
  """The folder of a model directory or of a checkpoint prefix in one."""
  if is_checkpoint_prefix(path) or not tf.io.gfile.isdir(path):
    return os.path.dirname(path)
  return path


def write_model_config(folder, model, pretraining=None, finetuned=None):
  """Writes `folder/model_config.json` atomically (any TF filesystem).

  `pretraining` (a pretraining run's settings) and `finetuned` (a fine-tuned
  seed folder's head) become the file's sections of those names.
  """
  values = {"format": FORMAT, "version": VERSION, "model": model.to_dict()}
  if pretraining is not None:
    values["pretraining"] = dict(pretraining)
  if finetuned is not None:
    values["finetuned"] = dict(finetuned)
  path = os.path.join(folder, MODEL_CONFIG_FILE)
  files.write_json(path, values)
  return path


def read_model_config(path):
  """The `RecordedConfig` of a model directory or checkpoint prefix (its
  folder's `model_config.json`), or None when there is none.

  Raises:
    ModelConfigError: a file that is there but unreadable (one line, naming
      it and the fix).
  """
  config_path = os.path.join(folder_of(path), MODEL_CONFIG_FILE)
  if not tf.io.gfile.exists(config_path):
    return None
  values = _load_json(config_path)
  try:
    model, pretraining = _from_model_config(values)
    finetuned = values.get("finetuned")
    if finetuned is not None and not isinstance(finetuned, dict):
      raise ValueError("its finetuned section is not an object")
  except (ValueError, TypeError, KeyError, AttributeError) as error:
    raise ModelConfigError(
        f"{config_path}: unreadable ({errors.first_line(error)}); restore it "
        "from the run that wrote the checkpoint") from None
  return RecordedConfig(model, pretraining, config_path, finetuned)


def require_model_config(path, program):
  """`read_model_config(path)`, or a `ModelConfigError` saying the fix."""
  recorded = read_model_config(path)
  if recorded is None:
    raise ModelConfigError(
        f"{folder_of(path)}: no {MODEL_CONFIG_FILE}; {program} needs a folder "
        "written by official_electra.train, official_electra.convert or "
        "official_electra.finetune")
  return recorded


def _from_model_config(values):
  if values.get("format") != FORMAT:
    raise ValueError(f"format {values.get('format')!r} is not {FORMAT!r}")
  if values.get("version") != VERSION:
    raise ValueError(f"version {values.get('version')!r} is not {VERSION}; "
                     "a newer official_electra wrote it: upgrade")
  return ModelConfig.from_dict(values["model"]), values.get("pretraining")


def _load_json(path):
  try:
    with tf.io.gfile.GFile(path) as config_file:
      return json.load(config_file)
  except (ValueError, tf.errors.OpError) as error:
    raise ModelConfigError(
        f"{path}: unreadable ({errors.first_line(error)}); restore it from "
        "the run that wrote the checkpoint") from None


