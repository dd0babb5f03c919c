"""The generator of an ELECTRA checkpoint fine-tuned as an encoder (at its own
size), then exported like any fine-tuned model (issue 44)."""

import shutil

import gin
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # pylint: disable=unused-import  (the export's ops)

from official_electra import finetune
from official_electra.modeling import checkpoints
from official_electra.modeling import model_config
from official_electra.modeling.models import electra_model
from official_electra.serving import finetuned_export


@pytest.fixture(autouse=True)
def _clear_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _electra_folder(folder, tiny_gin_file, tiny_vocab_file, objective):
  """A pretraining-layout folder of an `objective` model whose generator's
  weights are all 0.25 and discriminator's all 0.5 (told apart on restore)."""
  finetune._parse_gin([str(tiny_gin_file)], [])
  encoder = finetune.GinEncoderConfig()
  gin.clear_config()
  tokens = open(tiny_vocab_file).read().split()
  config = model_config.pretraining_model_config(
      encoder, objective, 0.5, 1.0, False, False,
      {token: tokens.index(token) for token in
       ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}, True, 32)
  model = electra_model.ElectraModel.from_config(config).build()
  for variable in model.discriminator_network.variables:
    variable.assign(tf.fill(variable.shape, 0.5))
  if getattr(model, "generator_network", None) is not None:
    for variable in model.generator_network.variables:
      if variable.ref() not in {v.ref() for v in
                                model.discriminator_network.variables}:
        variable.assign(tf.fill(variable.shape, 0.25))
  tf.train.Checkpoint(model=model).save(str(folder / "ckpt"))
  model_config.write_model_config(str(folder), config)
  shutil.copy(tiny_vocab_file, folder / checkpoints.VOCAB_FILE)
  return config


def test_the_generator_fine_tunes_at_its_size_and_exports(
    tmp_path, tiny_glue_dir, tiny_vocab_file, tiny_gin_file):
  pretrained = tmp_path / "electra"
  pretrained.mkdir()
  config = _electra_folder(pretrained, tiny_gin_file, tiny_vocab_file,
                           "electra")
  assert config.generator.hidden_size == 16 != config.discriminator.hidden_size
  # The architecture comes from the checkpoint (no glue_encoder bindings).
  finetune._parse_gin(["gin/glue/recipe.gin"],
                      ["glue_hyperparameters.num_train_epochs = 1"])
  # Built and restored from the generator: its own size, its own weights.
  encoder_config = finetune.resolve_encoder_config(str(pretrained),
                                                   "generator")
  assert encoder_config == config.generator
  restored = finetune.trainer.build_encoder(encoder_config, str(pretrained),
                                            "generator")
  own = [v for v in restored.variables if "embeddings" not in v.name]
  assert own and all(np.all(v.numpy() == 0.25) for v in own)

  model_dir = tmp_path / "run"
  finetune.run("SST-2", str(tiny_glue_dir), str(pretrained), str(model_dir),
               None, True, num_seeds=1, init_tower="generator")
  seed_dir = model_dir / "SST-2" / "seed_0"
  recorded = checkpoints.recorded_encoder_config(str(seed_dir))
  assert recorded.hidden_size == 16

  export_dir = tmp_path / "export" / "1"
  finetuned_export.export_finetuned(str(model_dir), str(export_dir))
  served = tf.saved_model.load(str(export_dir)).signatures["serving_default"]
  outputs = served(sentence=tf.constant(["the movie is good ."]))
  assert outputs["probabilities"].shape == (1, 2)


def test_a_folder_without_a_generator_is_one_line(tmp_path, tiny_vocab_file,
                                                  tiny_gin_file):
  mlm = tmp_path / "mlm"
  mlm.mkdir()
  _electra_folder(mlm, tiny_gin_file, tiny_vocab_file, "mlm")
  with pytest.raises(checkpoints.CheckpointError,
                     match="--init_tower=generator needs an --init_checkpoint "
                           "that records a generator"):
    finetune.resolve_encoder_config(str(mlm), "generator")
  with pytest.raises(checkpoints.CheckpointError, match="none was given"):
    finetune.resolve_encoder_config(None, "generator")
