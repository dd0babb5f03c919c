"""A fine-tuned run's seed folder holds a discriminator: it fine-tunes again
(e.g. an intermediate task first) and exports for TF Serving, like a
pretraining model_dir."""

import gin
import numpy as np
import pytest
import tensorflow as tf

from official_electra import finetune
from official_electra.modeling import checkpoints
from official_electra.modeling import encoder_config
from official_electra.serving import classifier_export
from official_electra.serving import pretraining_export


@pytest.fixture(autouse=True)
def _clear_gin():
  gin.clear_config()
  yield
  gin.clear_config()


@pytest.fixture
def seed_dir(tmp_path, tiny_glue_dir, tiny_vocab_file, tiny_gin_file):
  finetune._parse_gin([str(tiny_gin_file)], [])
  finetune.run("SST-2", str(tiny_glue_dir), None, str(tmp_path / "first"),
               str(tiny_vocab_file), True, num_seeds=1)
  gin.clear_config()
  return tmp_path / "first" / "SST-2" / "seed_0"


def _features(vocab_size):
  ids = np.random.default_rng(0).integers(5, vocab_size, size=(2, 12))
  ids[:, 0] = 2
  return {"input_word_ids": tf.constant(ids, tf.int32),
          "input_mask": tf.ones([2, 12], tf.int32),
          "input_type_ids": tf.zeros([2, 12], tf.int32)}


def test_seed_folder_restores_its_encoder_and_exports_it(seed_dir, tmp_path):
  classifier, _, _, _ = classifier_export.load_finetuned_run(str(seed_dir))
  config = checkpoints.recorded_encoder_config(str(seed_dir))
  assert config is not None and config.hidden_size == 32

  # The seed folder (no checkpoint state file) resolves to its checkpoint,
  # and the encoder read from it is the fine-tuned one, not a fresh one.
  assert checkpoints.resolve_checkpoint(str(seed_dir)) == str(
      seed_dir / "checkpoint" / "classifier")
  encoder = encoder_config.build_encoder(config)
  features = _features(config.vocab_size)
  fresh = encoder(features, training=False)["sequence_output"].numpy()
  checkpoints.restore_discriminator(encoder, str(seed_dir))
  expected = classifier.encoder(features, training=False)["sequence_output"]
  restored = encoder(features, training=False)["sequence_output"]
  np.testing.assert_allclose(restored, expected, rtol=1e-6, atol=1e-6)
  assert not np.allclose(fresh, expected, atol=1e-3)

  # `export --model_dir=<seed folder>`: the fine-tuned encoder, served.
  export_dir = str(tmp_path / "encoder_export" / "1")
  pretraining_export.export_pretrained(str(seed_dir), export_dir)
  served = tf.saved_model.load(export_dir).signatures["serving_default"](
      **features)
  np.testing.assert_allclose(served["sequence_output"], expected,
                             rtol=1e-5, atol=1e-5)


def test_finetunes_again_from_a_seed_folder(seed_dir, tmp_path, tiny_glue_dir,
                                            tiny_gin_file):
  # The architecture and vocabulary come from the seed folder: the gin file
  # without its glue_encoder bindings, and no --vocab_file.
  recipe_only = tmp_path / "recipe_only.gin"
  recipe_only.write_text("\n".join(
      line for line in tiny_gin_file.read_text().splitlines()
      if not line.startswith("glue_encoder.")) + "\n")
  finetune._parse_gin([str(recipe_only)], [
      "glue_hyperparameters.num_train_epochs = 1"])
  results = finetune.run("RTE", str(tiny_glue_dir), str(seed_dir),
                         str(tmp_path / "second"), None, True, num_seeds=1)
  assert 0.0 <= results["RTE"]["median"]["accuracy"] <= 1.0
  second = tmp_path / "second" / "RTE" / "seed_0"
  assert checkpoints.recorded_encoder_config(str(second)) == (
      checkpoints.recorded_encoder_config(str(seed_dir)))
