"""Ours -> HF -> ours; ours -> TF1 names (read by transformers); TF1 -> ours."""

import uuid

import numpy as np
import pytest
import tensorflow as tf
import transformers
from transformers.models.electra import modeling_electra

from official_electra import files
from official_electra.conversion import checkpoint_dir
from official_electra.conversion import converters
from official_electra.conversion import electra_parts
from official_electra.conversion import tf1_files
from official_electra.conversion import tf1_names
from tests.conversion import hf_reference as ref


@pytest.fixture
def our_checkpoint(tmp_path):
  """A tiny pretrainer with random weights (zero-initialised ones too)."""
  model = electra_parts.build_model(ref.TINY, ref.TINY_GENERATOR)
  rng = np.random.default_rng(0)
  for variable in model.trainable_variables:
    variable.assign(rng.normal(0.0, 0.05, variable.shape).astype(np.float32))
  return checkpoint_dir.write_checkpoint_dir(
      model, str(tmp_path / "ours"), electra_parts.BERT_SPECIAL_TOKEN_IDS)


def _model_weights(path):
  model = checkpoint_dir.load_checkpoint_dir(path)
  return model, {variable.name: variable.numpy()
                 for variable in model.trainable_variables}


def test_ours_to_hf_to_ours_is_the_identity(tmp_path, our_checkpoint):
  converters.export_hf(our_checkpoint, str(tmp_path / "hf_d"),
                       str(tmp_path / "hf_g"))
  converters.import_hf(str(tmp_path / "hf_d"), str(tmp_path / "hf_g"),
                       str(tmp_path / "again"))
  original_model, original = _model_weights(our_checkpoint)
  _, again = _model_weights(str(tmp_path / "again"))
  # Every trainable variable, the generator's embeddings_project included.
  assert len(original) == len(original_model.trainable_variables) == 66
  assert any("generator/embeddings_project" in name for name in original)
  assert again.keys() == original.keys()
  for name, value in original.items():
    np.testing.assert_array_equal(again[name], value, err_msg=name)


def test_hf_export_under_ram_is_the_local_export_file_for_file(
    tmp_path, our_checkpoint):
  root = f"ram://hf-export-{uuid.uuid4().hex}"
  local = {tower: str(tmp_path / tower) for tower in ("hf_d", "hf_g")}
  remote = {tower: f"{root}/{tower}" for tower in ("hf_d", "hf_g")}
  converters.export_hf(our_checkpoint, local["hf_d"], local["hf_g"])
  try:
    converters.export_hf(our_checkpoint, remote["hf_d"], remote["hf_g"])
    # No staging folder is left beside the outputs.
    assert sorted(files.listdir(root)) == ["hf_d", "hf_g"]
    assert sorted(files.listdir(str(tmp_path))) == ["hf_d", "hf_g", "ours"]
    names = ["config.json", "model.safetensors"]
    for tower, path in remote.items():
      assert sorted(files.listdir(path)) == names
      for name in names:
        assert files.read_bytes(f"{path}/{name}") == files.read_bytes(
            f"{local[tower]}/{name}"), (tower, name)
  finally:
    files.remove_tree(root)


def test_tf1_export_is_read_correctly_by_transformers(tmp_path,
                                                      our_checkpoint):
  names = converters.export_tf1(our_checkpoint, str(tmp_path / "tf1" / "model"))
  assert "electra/encoder/layer_1/attention/self/value/kernel" in names
  assert "generator/embeddings_project/kernel" in names
  assert "discriminator_predictions/dense_1/bias" in names
  model = checkpoint_dir.load_checkpoint_dir(our_checkpoint)
  batch = ref.padded_batch(ref.TINY.vocab_size)
  for tower, model_class, config in (
      ("discriminator", transformers.ElectraForPreTraining, ref.TINY),
      ("generator", transformers.ElectraForMaskedLM, ref.TINY_GENERATOR)):
    # Random initial weights: a parameter the loader skipped shows in logits.
    hf_model = model_class(ref.hf_config(config, tower))
    modeling_electra.load_tf_weights_in_electra(
        hf_model, hf_model.config, str(tmp_path / "tf1" / "model"), tower)
    theirs = ref.hf_logits(hf_model.eval(), batch)
    np.testing.assert_allclose(ref.our_logits(model, tower, batch), theirs,
                               rtol=0, atol=1e-4)


def _write_original_style_checkpoint(model, prefix, drop=(), resize=()):
  """TF1 names with `global_step` and Adam slots, as the authors' files."""
  weights = tf1_names.read_weights(model)
  for name in drop:
    del weights[name]
  for name in resize:
    weights[name] = np.zeros(weights[name].shape[:-1] + (7,), np.float32)
  tensors = {"global_step": np.array(1000, np.int64)}
  for name, value in weights.items():
    tensors[name] = value
    tensors[f"{name}/adam_m"] = np.zeros_like(value)
    tensors[f"{name}/adam_v"] = np.zeros_like(value)
  names = sorted(tensors)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                    shape_and_slices=[""] * len(names),
                    tensors=[tf.constant(tensors[name]) for name in names])


def test_tf1_import_skips_training_state_and_is_exact(tmp_path,
                                                      our_checkpoint):
  model, original = _model_weights(our_checkpoint)
  prefix = str(tmp_path / "original" / "electra_tiny")
  _write_original_style_checkpoint(model, prefix)
  converters.import_tf1(prefix, ref.TINY, ref.TINY_GENERATOR,
                        str(tmp_path / "imported"))
  _, imported = _model_weights(str(tmp_path / "imported"))
  assert imported.keys() == original.keys()
  for name, value in original.items():
    np.testing.assert_array_equal(imported[name], value, err_msg=name)


def test_tf1_import_lists_missing_and_mismatched_variables(tmp_path,
                                                           our_checkpoint):
  model = checkpoint_dir.load_checkpoint_dir(our_checkpoint)
  prefix = str(tmp_path / "original" / "electra_tiny")
  _write_original_style_checkpoint(
      model, prefix, drop=["electra/encoder/layer_0/output/LayerNorm/beta"],
      resize=["generator/encoder/layer_1/intermediate/dense/kernel"])
  with pytest.raises(electra_parts.ConversionError) as error:
    converters.import_tf1(prefix, ref.TINY, ref.TINY_GENERATOR,
                          str(tmp_path / "imported"))
  # The generator's FFN is 4 x its hidden size 8, as the original sizes it
  # (EncoderConfig.scaled); it was 16 (the discriminator's 64 x 0.25) before.
  assert str(error.value).splitlines()[1:] == [
      "  missing 1: electra/encoder/layer_0/output/LayerNorm/beta",
      "  shape mismatch (source vs model) 1: generator/encoder/layer_1/"
      "intermediate/dense/kernel (8, 7) vs (8, 32)"]
  assert not (tmp_path / "imported").exists()


def test_tf1_import_needs_the_generator_config_and_refuses_tf2(tmp_path,
                                                              our_checkpoint):
  model = checkpoint_dir.load_checkpoint_dir(our_checkpoint)
  prefix = str(tmp_path / "original" / "electra_tiny")
  _write_original_style_checkpoint(model, prefix)
  with pytest.raises(electra_parts.ConversionError, match="holds a generator"):
    converters.import_tf1(prefix, ref.TINY, None, str(tmp_path / "imported"))
  with pytest.raises(electra_parts.ConversionError, match="object-based"):
    tf1_files.read_tf1_checkpoint(our_checkpoint)
  other = str(tmp_path / "other" / "model")
  tf.raw_ops.SaveV2(prefix=other, tensor_names=["bert/pooler/dense/kernel"],
                    shape_and_slices=[""], tensors=[tf.zeros([2, 2])])
  with pytest.raises(electra_parts.ConversionError,
                     match="holds no ELECTRA encoder"):
    converters.import_tf1(other, ref.TINY, ref.TINY_GENERATOR,
                          str(tmp_path / "imported"))


def test_model_sizes_follow_the_paper():
  small, small_generator = converters.model_size_configs("small_plus_plus")
  assert (small.embedding_size, small.hidden_size, small.num_attention_heads,
          small.intermediate_size) == (128, 256, 4, 1024)
  assert small_generator == small
  base, base_generator = converters.model_size_configs("base")
  assert (base_generator.hidden_size, base_generator.num_attention_heads,
          base_generator.intermediate_size) == (256, 4, 1024)
  large, large_generator = converters.model_size_configs("large")
  assert (large.num_layers, large_generator.hidden_size) == (24, 256)
