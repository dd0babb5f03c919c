"""`ElectraSpanLabeler` to and from Hugging Face `ElectraForQuestionAnswering`.

Only the independent head without the answerability classifier has a place
in Hugging Face's model (ELECTRA_REFERENCE_SQUAD.md section 6):
`qa_outputs = Linear(H, 2)`, whose weight `[2, H]` is the start and end
kernels `[H, 1]` side by side, transposed, and bias `[start, end]`. The
encoder is `electra.*`, named as the discriminator's (`hf_names`,
`tf1_names`). Hugging Face applies no answer mask: its logits are ours where
the mask is 1 (ours are 1000 lower elsewhere). The folder holds
`config.json` (architectures `ElectraForQuestionAnswering`) and
`model.safetensors`, as `hf_files.write_hf_dir` writes a discriminator.
"""

import os

import numpy as np
import tensorflow as tf

from official_electra.conversion import electra_parts
from official_electra.conversion import hf_files
from official_electra.conversion import hf_names
from official_electra.conversion import tf1_names
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling.layers import span_heads
from official_electra.modeling.models import electra_span_labeler

ARCHITECTURE = "ElectraForQuestionAnswering"
QA_WEIGHT = "qa_outputs.weight"
QA_BIAS = "qa_outputs.bias"
# The head Hugging Face's `ElectraForQuestionAnswering` expresses.
HF_HEAD_CONFIG = span_heads.SpanHeadConfig(joint_prediction=False,
                                           answerable_classifier=False)


def _encoder_slots(encoder):
  """The encoder's TF1 slots, named as the discriminator's."""
  return (tf1_names.embedding_slots(encoder.embedding_layer) +
          tf1_names.encoder_slots(encoder, tf1_names.TOWER_SCOPES[
              "discriminator"]))


def _check_convertible(span_labeler):
  config = span_labeler.head_config
  if config.joint_prediction or config.answerable_classifier:
    parts = [part for part, present in (
        ("the joint-prediction head", config.joint_prediction),
        ("the answerability classifier", config.answerable_classifier))
             if present]
    raise electra_parts.ConversionError(
        f"this span labeler has {' and '.join(parts)}, which Hugging Face's "
        f"{ARCHITECTURE} cannot hold; only a model fine-tuned with "
        "squad_task.joint_prediction = False and "
        "squad_task.answerable_classifier = False converts")


def _built(span_labeler):
  if not span_labeler.built:
    span_labeler({key: tf.zeros([1, 2], tf.int32) for key in
                  ("input_word_ids", "input_mask", "input_type_ids")})
  return span_labeler


def write_hf_question_answering_dir(span_labeler, output_dir):
  """Writes `span_labeler` as a Hugging Face `ElectraForQuestionAnswering`.

  `ElectraForQuestionAnswering.from_pretrained(output_dir)` loads it. Written
  to a staging folder and published (`hf_files.write_hf_folder`; `config.json`
  last).

  Args:
    span_labeler: An `ElectraSpanLabeler` with the independent head and no
      answerability classifier.
    output_dir: A new folder (or an empty one).

  Raises:
    ConversionError: the head cannot be expressed, or `output_dir` is taken.
  """
  _check_convertible(span_labeler)
  electra_parts.check_new_output(output_dir)
  encoder = _built(span_labeler).encoder
  config = encoder_config_lib.EncoderConfig.from_dict(
      {key: value for key, value in encoder.get_config().items()
       if key != "name"})
  state = hf_names.to_hf_layout(
      tf1_names.read_slots(_encoder_slots(encoder)), "discriminator")
  head = span_labeler.span_head
  state[QA_WEIGHT] = np.ascontiguousarray(np.concatenate(
      [head.start_dense.kernel.numpy(), head.end_dense.kernel.numpy()],
      axis=1).T)
  state[QA_BIAS] = np.concatenate([head.start_dense.bias.numpy(),
                                   head.end_dense.bias.numpy()])
  hf_config = hf_files.hf_config_from_encoder(config, "discriminator")
  hf_config["architectures"] = [ARCHITECTURE]
  hf_files.write_hf_folder(output_dir, state, hf_config)


def read_hf_question_answering_dir(hf_dir):
  """An `ElectraSpanLabeler` from a Hugging Face `ElectraForQuestionAnswering`.

  Args:
    hf_dir: A folder `save_pretrained` (or `write_hf_question_answering_dir`)
      wrote: `config.json` and `model.safetensors` (or `pytorch_model.bin`,
      which needs torch).

  Returns:
    A built `ElectraSpanLabeler` with the independent head and no
    answerability classifier (`HF_HEAD_CONFIG`), every weight set.

  Raises:
    ConversionError: the folder is not an `ElectraForQuestionAnswering`
      export, or its weights do not fit its config (missing, unexpected or
      mis-shaped parameters); nothing is assigned then.
  """
  hf_config, state = hf_files.read_hf_dir(hf_dir)
  config_path = os.path.join(hf_dir, hf_files.CONFIG_FILE)
  architectures = hf_config.get("architectures") or []
  if ARCHITECTURE not in architectures:
    raise electra_parts.ConversionError(
        f"{config_path}: architectures is {architectures}, not "
        f"[{ARCHITECTURE!r}]; pass a folder saved from {ARCHITECTURE} "
        "(a pretraining export converts with --hf_dir instead)")
  encoder_config = hf_files.encoder_config_from_hf(hf_config, config_path)
  span_labeler = _built(electra_span_labeler.ElectraSpanLabeler(
      encoder_config_lib.build_encoder(encoder_config), HF_HEAD_CONFIG))
  slots = _encoder_slots(span_labeler.encoder)
  name_map = hf_names.hf_name_map([slot.name for slot in slots],
                                  "discriminator")
  expected_shapes = {}
  for slot in slots:
    hf_name, transposed = name_map[slot.name]
    shape = tf1_names.slot_shape(slot)
    expected_shapes[hf_name] = shape[::-1] if transposed else shape
  expected_shapes[QA_WEIGHT] = (2, encoder_config.hidden_size)
  expected_shapes[QA_BIAS] = (2,)
  electra_parts.raise_if_mismatched(
      f"{hf_dir} is not the {ARCHITECTURE} its config.json describes; pass "
      f"an {ARCHITECTURE} folder saved with save_pretrained:",
      set(expected_shapes) - set(state),
      set(state) - set(expected_shapes) - hf_names.IGNORED_HF_NAMES,
      [f"{name} {state[name].shape} vs {shape}"
       for name, shape in expected_shapes.items()
       if name in state and tuple(state[name].shape) != shape])
  tf1_names.assign_slots(slots, hf_names.from_hf_layout(state, name_map))
  head = span_labeler.span_head
  weight, bias = state[QA_WEIGHT], state[QA_BIAS]
  for dense, row in ((head.start_dense, 0), (head.end_dense, 1)):
    dense.kernel.assign(weight[row][:, np.newaxis])
    dense.bias.assign(bias[row:row + 1])
  return span_labeler

