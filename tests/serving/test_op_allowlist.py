"""Tests for the TF Serving op-set check."""

import pytest
import tensorflow as tf
import tensorflow_text as text

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
