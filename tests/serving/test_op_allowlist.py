"""Tests for the TF Serving op-set check."""

import re

import pytest
import tensorflow as tf
import tensorflow_text as text
from tensorflow.python.framework import op_def_registry

from official_electra.serving import op_allowlist


def _save(tmp_path, function, input_signature, name, module=None):
  module = module or tf.Module()
  module.serve = tf.function(function, input_signature=input_signature)
  path = str(tmp_path / name)
  tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
  return path


def test_lists_ops_inside_functions(tmp_path):
  variable_holder = tf.Module()
  variable_holder.scale = tf.Variable(2.0)

  def scaled_square(x):
    return {"y": tf.square(x) * variable_holder.scale}

  path = _save(tmp_path, scaled_square, [tf.TensorSpec([None], tf.float32)],
               "square", module=variable_holder)
  op_types = op_allowlist.check_serving_op_types(path)
  assert {"Square", "Mul", "ReadVariableOp"} <= op_types


def test_accepts_old_tf_text_ops(tmp_path):
  def fold(strings):
    return {"folded": text.case_fold_utf8(text.normalize_utf8(strings, "NFD"))}

  path = _save(tmp_path, fold, [tf.TensorSpec([None], tf.string)], "fold")
  assert {"CaseFoldUTF8", "NormalizeUTF8"} <= op_allowlist.check_serving_op_types(
      path)


def test_rejects_new_tf_text_ops(tmp_path):
  trimmer = text.RoundRobinTrimmer(max_seq_length=4)

  def trim(ids):
    ragged = tf.RaggedTensor.from_tensor(ids)
    return {"trimmed": trimmer.trim([ragged, ragged])[0].to_tensor()}

  path = _save(tmp_path, trim, [tf.TensorSpec([None, None], tf.int32)], "trim")
  assert "TFText>RoundRobinTrim" in op_allowlist.list_op_types(path)
  with pytest.raises(op_allowlist.UnservableOpsError,
                     match=r"TFText>RoundRobinTrim are not registered"):
    op_allowlist.check_serving_op_types(path)


def test_servable_op_types():
  assert op_allowlist.is_servable_op_type("StatefulPartitionedCall")
  assert op_allowlist.is_servable_op_type("WordpieceTokenizeWithOffsets")
  assert not op_allowlist.is_servable_op_type("TFText>RoundRobinTrim")
  assert not op_allowlist.is_servable_op_type("MyCustomOp")


def _listed_names_by_section():
  """The op names of tf_serving_ops.txt under each `# --- title ---` line."""
  sections = {}
  with open(op_allowlist.SERVING_OPS_FILE, encoding="utf-8") as op_file:
    for line in op_file:
      title = re.match(r"# --- (.+) ---$", line.strip())
      if title:
        current = sections.setdefault(title.group(1), [])
        continue
      name = op_allowlist.op_type_of_line(line)
      if name:
        current.append(name)
  return sections


def test_the_list_is_checked_in_not_taken_from_the_installed_tensorflow():
  # Core ops the installed TensorFlow registers but TF Serving's list lacks
  # (added after 2.0.0 and used by no export) must be rejected: an allowlist
  # that deferred to `tf.raw_ops` would accept them.
  installed_only = sorted(
      name for name in dir(tf.raw_ops) if not name.startswith("_")
      and name not in op_allowlist.servable_op_types())
  assert "UniformQuantizedDot" in installed_only
  assert "XlaSparseDenseMatmulWithCsrInput" in installed_only
  assert not any(op_allowlist.is_servable_op_type(op) for op in installed_only)


def test_the_list_has_the_sections_and_counts_its_header_states():
  sections = _listed_names_by_section()
  assert list(sections) == [
      "Core TensorFlow 2.0.0",
      "Core TensorFlow ops added after 2.0.0 that our exports use",
      "TF Text ops under their plain names (TF Text 2.12.1)"]
  core, later, tf_text = sections.values()
  # 1213 transcribed names less the 15 that TensorFlow 2.20 dropped.
  assert len(core) == 1198
  assert core == sorted(core)  # The golden file's order.
  assert {"Abort", "MatMul", "StatefulPartitionedCall", "ZipDataset"} <= set(
      core)
  assert "CompareAndBitpack" not in core  # Dropped after 2.0.0.
  assert later == ["DenseBincount", "DisableCopyOnRead", "RngReadAndSkip",
                   "StatelessRandomGetKeyCounter",
                   "StatelessRandomUniformFullIntV2"]
  assert len(tf_text) == 20
  names = core + later + tf_text
  assert len(set(names)) == len(names)
  assert all(re.fullmatch(r"[A-Z][A-Za-z0-9_]*", name) for name in names)
  assert op_allowlist.servable_op_types() == frozenset(names)


def test_every_listed_op_is_registered_by_the_pinned_release():
  # The list may be narrower than TF Serving's registry, never wider: each
  # name is a real op of the TensorFlow and TF Text releases we pin (their
  # import registers them), so a typo or an op a release dropped fails here.
  assert tf.__version__.startswith("2.20")
  assert text.__version__.startswith("2.20")
  unregistered = sorted(name for name in op_allowlist.servable_op_types()
                        if op_def_registry.get(name) is None)
  assert not unregistered
