"""Importing Hugging Face ELECTRA: logits equal transformers', strict errors."""

import json
import os

import numpy as np
import pytest
import safetensors.numpy
import tensorflow as tf
import transformers

from official_electra.conversion import checkpoint_dir
from official_electra.conversion import converters
from official_electra.conversion import electra_parts
from tests.conversion import hf_reference as ref


def _save(model, path, safe_serialization=True):
  model.save_pretrained(path, safe_serialization=safe_serialization)
  return str(path)


@pytest.mark.parametrize("discriminator_config,generator_config", [
    (ref.TINY, ref.TINY_GENERATOR), (ref.SMALL, ref.SMALL_GENERATOR)],
                         ids=["tiny", "small"])
def test_imported_pretraining_model_gives_transformers_logits(
    tmp_path, discriminator_config, generator_config):
  discriminator, generator = ref.random_hf_models(discriminator_config,
                                                  generator_config)
  output_dir = tmp_path / "ours"
  prefix = converters.import_hf(_save(discriminator, tmp_path / "d"),
                                _save(generator, tmp_path / "g"),
                                str(output_dir))
  assert prefix == str(output_dir / "ckpt-0")
  assert checkpoint_dir.read_configs(str(output_dir)) == (discriminator_config,
                                                         generator_config)
  model = checkpoint_dir.load_checkpoint_dir(str(output_dir))
  # The two towers share one embedding block, as in the pretrainer.
  assert (model.discriminator_network.embedding_layer is
          model.generator_network.embedding_layer)
  batch = ref.padded_batch(discriminator_config.vocab_size)
  for tower, hf_model in (("discriminator", discriminator),
                          ("generator", generator)):
    ours = ref.our_logits(model, tower, batch)
    theirs = ref.hf_logits(hf_model, batch)
    assert ours.shape == theirs.shape
    # Not a degenerate comparison: logits vary along the sequence.
    assert theirs.std(axis=1).mean() > 0.01
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-4)


def test_discriminator_only_from_pytorch_bin_holds_only_the_discriminator(
    tmp_path):
  discriminator, _ = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  hf_dir = _save(discriminator, tmp_path / "d", safe_serialization=False)
  assert os.path.isfile(os.path.join(hf_dir, "pytorch_model.bin"))
  converters.import_hf(hf_dir, None, str(tmp_path / "ours"))
  assert sorted(os.listdir(tmp_path / "ours")) == [
      "checkpoint", "ckpt-0.data-00000-of-00001", "ckpt-0.index",
      "model_config.json"]
  names = [name for name, _ in tf.train.list_variables(
      str(tmp_path / "ours" / "ckpt-0"))]
  assert any(name.startswith("model/discriminator_network/") for name in names)
  assert not any("generator" in name for name in names)
  model = checkpoint_dir.load_checkpoint_dir(str(tmp_path / "ours"))
  batch = ref.padded_batch(ref.TINY.vocab_size)
  np.testing.assert_allclose(ref.our_logits(model, "discriminator", batch),
                             ref.hf_logits(discriminator, batch), atol=1e-4)


def test_generator_only_import(tmp_path):
  _, generator = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  converters.import_hf(None, _save(generator, tmp_path / "g"),
                       str(tmp_path / "ours"))
  assert checkpoint_dir.read_configs(str(tmp_path / "ours")) == (
      None, ref.TINY_GENERATOR)
  model = checkpoint_dir.load_checkpoint_dir(str(tmp_path / "ours"))
  batch = ref.padded_batch(ref.TINY.vocab_size)
  np.testing.assert_allclose(ref.our_logits(model, "generator", batch),
                             ref.hf_logits(generator, batch), atol=1e-4)


def test_different_embeddings_are_refused(tmp_path):
  discriminator, generator = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  generator.electra.embeddings.position_embeddings.weight.data.mul_(2.0)
  with pytest.raises(electra_parts.ConversionError,
                     match=r"different embeddings \(electra/embeddings/"
                     r"position_embeddings\)"):
    converters.import_hf(_save(discriminator, tmp_path / "d"),
                         _save(generator, tmp_path / "g"),
                         str(tmp_path / "ours"))
  assert not (tmp_path / "ours").exists()


def test_missing_and_unexpected_parameters_are_listed(tmp_path):
  discriminator, _ = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  hf_dir = _save(discriminator, tmp_path / "d")
  weights_path = os.path.join(hf_dir, "model.safetensors")
  state = safetensors.numpy.load_file(weights_path)
  del state["electra.encoder.layer.1.output.dense.bias"]
  state["classifier.out_proj.weight"] = np.zeros((2, 32), np.float32)
  safetensors.numpy.save_file(state, weights_path, metadata={"format": "pt"})
  with pytest.raises(electra_parts.ConversionError) as error:
    converters.import_hf(hf_dir, None, str(tmp_path / "ours"))
  message = str(error.value)
  assert message.splitlines()[1:] == [
      "  missing 1: electra.encoder.layer.1.output.dense.bias",
      "  unexpected 1: classifier.out_proj.weight"]
  assert not (tmp_path / "ours").exists()


def test_unsupported_config_and_untied_output_embedding_are_refused(tmp_path):
  discriminator, generator = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  hf_dir = _save(discriminator, tmp_path / "d")
  config_path = os.path.join(hf_dir, "config.json")
  config = json.loads(open(config_path).read())
  config["hidden_act"] = "gelu_new"
  with open(config_path, "w") as config_file:
    json.dump(config, config_file)
  with pytest.raises(electra_parts.ConversionError, match="hidden_act"):
    converters.import_hf(hf_dir, None, str(tmp_path / "ours"))
  generator_dir = _save(generator, tmp_path / "g")
  weights_path = os.path.join(generator_dir, "model.safetensors")
  state = safetensors.numpy.load_file(weights_path)
  state["generator_lm_head.weight"] = state[
      "electra.embeddings.word_embeddings.weight"] + 1.0
  safetensors.numpy.save_file(state, weights_path, metadata={"format": "pt"})
  with pytest.raises(electra_parts.ConversionError, match="tie"):
    converters.import_hf(None, generator_dir, str(tmp_path / "ours"))


def test_existing_output_is_not_overwritten(tmp_path):
  discriminator, _ = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  (tmp_path / "ours").mkdir()
  (tmp_path / "ours" / "keep.txt").write_text("mine")
  with pytest.raises(electra_parts.ConversionError, match="already exists"):
    converters.import_hf(_save(discriminator, tmp_path / "d"), None,
                         str(tmp_path / "ours"))
  assert os.listdir(tmp_path / "ours") == ["keep.txt"]


def test_hf_export_loads_in_transformers_without_missing_keys(tmp_path):
  discriminator, generator = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  converters.import_hf(_save(discriminator, tmp_path / "d"),
                       _save(generator, tmp_path / "g"), str(tmp_path / "ours"))
  converters.export_hf(str(tmp_path / "ours"), str(tmp_path / "hf_d"),
                       str(tmp_path / "hf_g"))
  batch = ref.padded_batch(ref.TINY.vocab_size)
  for model_class, path, reference in (
      (transformers.ElectraForPreTraining, "hf_d", discriminator),
      (transformers.ElectraForMaskedLM, "hf_g", generator)):
    loaded, info = model_class.from_pretrained(str(tmp_path / path),
                                               output_loading_info=True)
    assert info["missing_keys"] == [] and info["unexpected_keys"] == []
    assert info["mismatched_keys"] == []
    np.testing.assert_array_equal(ref.hf_logits(loaded.eval(), batch),
                                  ref.hf_logits(reference, batch))


def test_unreadable_weights_file_is_named(tmp_path):
  discriminator, _ = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  hf_dir = _save(discriminator, tmp_path / "d")
  (tmp_path / "d" / "model.safetensors").write_bytes(b"not a safetensors file")
  with pytest.raises(electra_parts.ConversionError,
                     match=r"model\.safetensors: unreadable"):
    converters.import_hf(hf_dir, None, str(tmp_path / "ours"))
