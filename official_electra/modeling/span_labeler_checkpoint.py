"""A fine-tuned span labeler's seed folder (SQuAD), rebuilt with its weights.

The seed folder's files are `finetuned_checkpoint.py`'s (the one layout of
every task family); a span labeler's head description (the `finetuned`
section of its model_config.json, family `span_extraction`, written by
`finetuning/squad_family.py`) holds the task, the SQuAD version, the head
(`SpanHeadConfig.to_dict()`) and the SQuAD settings (doc stride, query
length, n-best size, answer length, null threshold, ...). Export
(`serving/qa_export.py`) reads it back here, in the model tier, without
the fine-tuning code.
"""

import tensorflow as tf

from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import errors
from official_electra.modeling import finetuned_checkpoint
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling.layers import span_heads
from official_electra.modeling.models import electra_span_labeler

_INPUT_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


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
