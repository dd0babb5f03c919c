"""Which op types a SavedModel needs, and whether stock TF Serving has them.

A SavedModel that uses an op the TF Serving binary lacks loads in Python but
fails in TF Serving with "Op type not registered". `check_serving_op_types`
lists every op type in a SavedModel's graphs, including every function in
their libraries (where `tf.function` bodies and Keras layers live), and
accepts only the op types in `tf_serving_ops.txt` beside this module: a list
checked in from TF Serving's and TensorFlow's published sources (its header
names each source and commit), never derived from the installed TensorFlow,
so a newer TensorFlow on the exporting machine cannot widen it. It holds core
TensorFlow 2.0.0's ops, the later core ops our exports need, and the TF Text
ops that stock TF Serving's embedded TF Text 2.12.1 registers under their
plain names. Ops with the `TFText>` prefix (for example
`TFText>RoundRobinTrim` behind `RoundRobinTrimmer`) are newer TF Text kernels
that it does not register (ELECTRA_REFERENCE.md Section 7).
"""

import functools
import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from official_electra import errors
from official_electra import files

SERVING_OPS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "tf_serving_ops.txt")


def op_type_of_line(line: str) -> str:
  """The op type a line of `tf_serving_ops.txt` lists ('' for none)."""
  return line.split("#", 1)[0].strip()


@functools.cache
def servable_op_types() -> frozenset[str]:
  """The op types in `tf_serving_ops.txt`: one per line, `#` a comment."""
  with open(SERVING_OPS_FILE, encoding="utf-8") as op_file:
    return frozenset(filter(None, map(op_type_of_line, op_file)))


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
  """Whether stock TF Serving registers `op_type` (`tf_serving_ops.txt`)."""
  return op_type in servable_op_types()


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
        "stock TF Serving (not in official_electra/serving/tf_serving_ops.txt: "
        "core TensorFlow and TF Text 2.12 ops); replace them with core-TF "
        "equivalents before exporting, or, if your TF Serving release "
        "registers them, add them there with that source")
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
