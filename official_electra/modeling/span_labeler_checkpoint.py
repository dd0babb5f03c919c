"""A fine-tuned span labeler's seed folder (SQuAD), rebuilt with its weights.

The seed folder's files are `finetuned_checkpoint.py`'s (the one layout of
every task family); a span labeler's head description (the `finetuned`
section of its model_config.json, family `span_extraction`, written by
`finetuning/squad_family.py`) holds the task, the SQuAD version, the head
(`SpanHeadConfig.to_dict()`) and the SQuAD settings (doc stride, query
length, n-best size, answer length, null threshold, ...). Export
(`serving/qa_export.py`) reads it back here, in the model tier, without
the fine-tuning code. The settings are `SquadSettings`, declared here so
that every tier that writes or reads a seed folder shares them (gin binds
them as `squad_task`, `finetuning/squad_family.py`).
"""

import dataclasses

import tensorflow as tf

from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import errors
from official_electra.modeling import finetuned_checkpoint
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling.layers import span_heads
from official_electra.modeling.models import electra_span_labeler

_INPUT_KEYS = ("input_word_ids", "input_mask", "input_type_ids")
# Task name -> SQuAD version.
TASK_NAMES = {"SQuAD-1.1": "1.1", "SQuAD-2.0": "2.0"}


# `SpanHeadConfig`'s fields as `SquadSettings` holds them (and gin binds them,
# `squad_task.<name>`): the same names, but `head_hidden_size`.
_HEAD_SETTING_NAMES = {
    field.name: ("head_hidden_size" if field.name == "hidden_size"
                 else field.name)
    for field in dataclasses.fields(span_heads.SpanHeadConfig)}
# One field per `SpanHeadConfig` field (its type and default): the head's
# settings are declared once, there.
_SpanHeadSettings = dataclasses.make_dataclass(
    "_SpanHeadSettings",
    [(_HEAD_SETTING_NAMES[field.name], field.type, field.default)
     for field in dataclasses.fields(span_heads.SpanHeadConfig)],
    frozen=True)


@dataclasses.dataclass(frozen=True)
class SquadSettings(_SpanHeadSettings):
  """What SQuAD adds to the shared fine-tuning hyperparameters; defaults
  are the original's (`configure_finetuning.py`).

  Besides the attributes below, the span head's settings: the fields of
  `span_heads.SpanHeadConfig` (`joint_prediction`, `beam_size`,
  `answerable_classifier`, `answerable_uses_start_logits`,
  `answerable_weight`), its `hidden_size` as `head_hidden_size`;
  `head_config()` builds that config from them.

  Attributes:
    doc_stride: tokens between the starts of a context's windows.
    max_query_length: question tokens kept (the first ones).
    n_best_size: candidates kept per question in post-processing.
    max_answer_length: longest answer, in tokens.
    null_threshold: SQuAD 2.0: predict no answer when the null odds exceed
      it (`qa_na_threshold`, -2.75).
  """
  doc_stride: int = 128
  max_query_length: int = 64
  n_best_size: int = 20
  max_answer_length: int = 30
  null_threshold: float = -2.75

  def head_config(self) -> span_heads.SpanHeadConfig:
    return span_heads.SpanHeadConfig(**{
        name: getattr(self, setting_name)
        for name, setting_name in _HEAD_SETTING_NAMES.items()})


def describe(task_name: str, settings: SquadSettings) -> dict:
  """The head description a SQuAD seed folder records (its model_config.json
  `finetuned` section): the task, its version, the head and the settings."""
  return {"family": finetuned_checkpoint.SPAN_EXTRACTION,
          "task": task_name,
          "version": TASK_NAMES[task_name],
          "head": settings.head_config().to_dict(),
          "settings": dataclasses.asdict(settings)}


def read_description(run_dir: str) -> dict:
  """The span labeler's head description of a seed folder.

  Raises:
    finetuned_checkpoint.FinetunedCheckpointError: not a seed folder, or the
      seed folder of another family (a classifier).
  """
  description = finetuned_checkpoint.read_description(run_dir)
  if description["family"] != finetuned_checkpoint.SPAN_EXTRACTION:
    raise finetuned_checkpoint.FinetunedCheckpointError(
        f"{run_dir}: a fine-tuned {description['family']} model, not a span "
        "extraction (SQuAD) one; pass the seed folder of a SQuAD fine-tuning")
  return description


def head_config_of(run_dir: str, description: dict
                   ) -> span_heads.SpanHeadConfig:
  """The recorded `SpanHeadConfig`.

  Raises:
    finetuned_checkpoint.FinetunedCheckpointError: missing or unknown head
      settings.
  """
  try:
    return span_heads.SpanHeadConfig.from_dict(description["head"])
  except (KeyError, TypeError, ValueError) as error:
    raise finetuned_checkpoint.FinetunedCheckpointError(
        f"{run_dir}: its model_config.json has an unusable span head "
        f"description ({errors.first_line(error)}); "
        "fine-tune again") from None


def load_span_labeler(run_dir: str):
  """`(span_labeler, description)` of a seed folder, its weights restored.

  Args:
    run_dir: the seed folder (`<model_dir>/SQuAD-<version>/seed_<s>`).

  Returns:
    A built `ElectraSpanLabeler` (no optimizer; prediction outputs when
    called with `training=False`) and the `finetuned` description.

  Raises:
    finetuned_checkpoint.FinetunedCheckpointError: the folder is incomplete,
      inconsistent or not a span labeler's.
    model_config.ModelConfigError: its model_config.json is missing or
      unreadable.
  """
  description = read_description(run_dir)
  recorded = model_config_lib.require_model_config(
      run_dir, "loading a fine-tuned span labeler")
  head_config = head_config_of(run_dir, description)
  encoder = encoder_config_lib.build_encoder(recorded.model.discriminator)
  model = electra_span_labeler.ElectraSpanLabeler(encoder, head_config)
  # Creates every variable: each head layer builds all its sublayers.
  model({key: tf.zeros([1, 4], tf.int32) for key in _INPUT_KEYS},
        training=False)
  finetuned_checkpoint.restore(model, run_dir, description)
  return model, description
