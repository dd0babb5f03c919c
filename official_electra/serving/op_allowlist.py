"""Which op types a SavedModel needs, and whether stock TF Serving has them.

The stock TF Serving binary links core TensorFlow and an older TF Text (2.12.1
as of 2025; ELECTRA_REFERENCE.md Section 7). A SavedModel that uses an op it
lacks loads in Python but fails in TF Serving with "Op type not registered".
`check_serving_op_types` lists every op type in a SavedModel's graphs,
including every function in their libraries (where `tf.function` bodies and
Keras layers live), and accepts only core TensorFlow ops (those in
`tf.raw_ops`) and the old TF Text ops below. Ops with the `TFText>` prefix are
newer TF Text kernels (for example `TFText>RoundRobinTrim` behind
`RoundRobinTrimmer`) that stock TF Serving does not register.
"""

import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from official_electra import errors
from official_electra import files

# TF Text ops registered by TF Text 2.12 (the version stock TF Serving embeds)
# under their plain names.
OLD_TF_TEXT_OP_TYPES = frozenset({
    "CaseFoldUTF8",
    "ConstrainedSequence",
    "FastBertNormalize",
    "FastWordpieceTokenizeWithOffsets",
    "FindSourceOffsets",
    "NormalizeUTF8",
    "NormalizeUTF8WithOffsetsMap",
    "RegexSplitWithOffsets",
    "SentenceFragmentsV2",
    "SentencepieceDetokenizeOp",
    "SentencepieceIdToStringOp",
    "SentencepieceOp",
    "SentencepieceStringToIdOp",
    "SentencepieceTokenizeOp",
    "SentencepieceVocabSizeOp",
    "SplitMergeTokenizeWithOffsets",
    "TokenizerFromLogits",
    "UnicodeScriptTokenizeWithOffsets",
    "WhitespaceTokenizeWithOffsets",
    "WordpieceTokenizeWithOffsets",
})

NEW_TF_TEXT_PREFIX = "TFText>"


class UnservableOpsError(errors.UserError):
  """A SavedModel uses ops that stock TF Serving does not register."""


def list_op_types(saved_model_dir: str) -> set[str]:
  """Every op type in the SavedModel's graphs and in all their functions.

  Args:
    saved_model_dir: a directory holding `saved_model.pb`.

  Returns:
    The set of op type names.
  """
  saved_model = saved_model_pb2.SavedModel()
  with tf.io.gfile.GFile(os.path.join(saved_model_dir, "saved_model.pb"),
                         "rb") as proto_file:
    saved_model.ParseFromString(proto_file.read())
  op_types = set()
  for meta_graph in saved_model.meta_graphs:
    op_types.update(node.op for node in meta_graph.graph_def.node)
    for function in meta_graph.graph_def.library.function:
      op_types.update(node.op for node in function.node_def)
  return op_types


def is_servable_op_type(op_type: str) -> bool:
  """Whether stock TF Serving registers `op_type`."""
  if op_type.startswith(NEW_TF_TEXT_PREFIX):
    return False
  return op_type in OLD_TF_TEXT_OP_TYPES or hasattr(tf.raw_ops, op_type)


def check_serving_op_types(saved_model_dir: str) -> set[str]:
  """Returns the SavedModel's op types; raises if any is not servable.

  Raises:
    UnservableOpsError: naming the directory and every unservable op type.
  """
  op_types = list_op_types(saved_model_dir)
  unservable = sorted(op for op in op_types if not is_servable_op_type(op))
  if unservable:
    raise UnservableOpsError(
        f"{saved_model_dir}: ops {', '.join(unservable)} are not registered by "
        "stock TF Serving (only core TensorFlow and TF Text 2.12 ops are); "
        "replace them with core-TF equivalents before exporting")
  return op_types


def save_servable(module: tf.Module, export_dir: str) -> None:
  """Saves `module` with its `signatures()` as a SavedModel TF Serving can load.

  Written under `<export_dir>.tmp`, checked with `check_serving_op_types`, then
  moved (`files.publish_folder`: a rename locally; on `gs://`, a copy with
  `saved_model.pb` last): a failed or killed export never leaves a
  complete-looking folder.

  Raises:
    UnservableOpsError: the graph needs ops stock TF Serving lacks (nothing is
      left behind).
  """
  temporary_dir = f"{export_dir.rstrip('/')}.tmp"
  files.remove_tree(temporary_dir)
  tf.saved_model.save(module, temporary_dir, signatures=module.signatures())
  try:
    check_serving_op_types(temporary_dir)
  except UnservableOpsError:
    files.remove_tree(temporary_dir)
    raise
  files.publish_folder(temporary_dir, export_dir.rstrip("/"),
                       last="saved_model.pb")
