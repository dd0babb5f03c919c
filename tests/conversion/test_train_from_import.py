"""Pretraining continues from an import; a training model_dir exports back."""

import numpy as np
import pytest
import transformers

from official_electra.conversion import checkpoint_dir
from official_electra.conversion import converters
from official_electra.conversion import tf1_names
from official_electra.modeling import model_config
from official_electra.modeling.models import electra_model
from tests.conversion import hf_reference as ref
from tests.training import tiny_pretraining


def _trainable(model):
  """Every variable by its TF1 name (Keras names depend on build order)."""
  named = {id(slot.variable) for slot in tf1_names.model_slots(model)}
  assert named == {id(variable) for variable in model.trainable_variables}
  return tf1_names.read_weights(model)


def test_import_records_its_model_and_any_reader_restores_it(tmp_path):
  discriminator, generator = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  discriminator.save_pretrained(tmp_path / "hf_d")
  generator.save_pretrained(tmp_path / "hf_g")
  converters.import_hf(str(tmp_path / "hf_d"), str(tmp_path / "hf_g"),
                       str(tmp_path / "ours"))
  recorded = model_config.read_model_config(str(tmp_path / "ours"))
  assert recorded.path == str(tmp_path / "ours" / "model_config.json")
  assert recorded.model.discriminator == ref.TINY
  assert recorded.model.generator == ref.TINY_GENERATOR
  assert recorded.model.heads == ("discriminator", "generator")
  # An import is no pretraining run: it records no procedure.
  assert recorded.pretraining is None
  # The weights-only model of the recorded config restores every weight.
  restored = electra_model.ElectraModel.from_config(recorded.model).build()
  restored.restore(str(tmp_path / "ours" / "ckpt-0"))
  imported = _trainable(checkpoint_dir.load_checkpoint_dir(
      str(tmp_path / "ours")))
  restored = _trainable(restored)
  assert restored.keys() == imported.keys()
  for name, value in imported.items():
    np.testing.assert_array_equal(restored[name], value, err_msg=name)


def test_generator_that_is_not_a_scaled_discriminator_keeps_its_config(
    tmp_path):
  generator_config = ref.TINY_GENERATOR.__class__.from_dict(
      dict(ref.TINY_GENERATOR.__dict__, num_attention_heads=2))
  discriminator, generator = ref.random_hf_models(ref.TINY, generator_config)
  discriminator.save_pretrained(tmp_path / "hf_d")
  generator.save_pretrained(tmp_path / "hf_g")
  converters.import_hf(str(tmp_path / "hf_d"), str(tmp_path / "hf_g"),
                       str(tmp_path / "ours"))
  assert sorted(name for name in (tmp_path / "ours").iterdir()
                if name.suffix == ".json") == [
                    tmp_path / "ours" / "model_config.json"]
  assert checkpoint_dir.read_configs(str(tmp_path / "ours")) == (
      ref.TINY, generator_config)


@pytest.mark.filterwarnings("ignore")
def test_pretraining_starts_from_an_import_and_exports_back(tmp_path):
  data = tiny_pretraining.build_data(tmp_path)
  config = tiny_pretraining.tiny_encoder(data[2])
  discriminator, generator = ref.random_hf_models(config, config.scaled(0.5))
  discriminator.save_pretrained(tmp_path / "hf_d")
  generator.save_pretrained(tmp_path / "hf_g")
  converters.import_hf(str(tmp_path / "hf_d"), str(tmp_path / "hf_g"),
                       str(tmp_path / "imported"), vocab_file=str(data[1]))
  # A learning rate too small to move the weights measurably in 2 steps.
  tiny_pretraining.train(tmp_path / "run", data, num_train_steps=2,
                         learning_rate=1e-9,
                         init_checkpoint=str(tmp_path / "imported"))
  imported = _trainable(checkpoint_dir.load_checkpoint_dir(
      str(tmp_path / "imported")))
  # The training run's own model_dir (its model_config.json) reads back too.
  trained = _trainable(checkpoint_dir.load_checkpoint_dir(
      str(tmp_path / "run")))
  assert trained.keys() == imported.keys()
  for name, value in imported.items():
    np.testing.assert_allclose(trained[name], value, rtol=0, atol=1e-6,
                               err_msg=name)
  converters.export_hf(str(tmp_path / "run"), str(tmp_path / "out_d"))
  loaded = transformers.ElectraForPreTraining.from_pretrained(
      str(tmp_path / "out_d")).eval()
  batch = ref.padded_batch(config.vocab_size)
  np.testing.assert_allclose(ref.hf_logits(loaded, batch),
                             ref.hf_logits(discriminator, batch), atol=1e-4)
