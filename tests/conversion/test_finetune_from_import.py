"""Fine-tuning starts from a checkpoint imported from Hugging Face."""

import dataclasses
import json

import gin
import numpy as np
import pytest
import tensorflow as tf
import torch

from official_electra import finetune
from official_electra.conversion import checkpoint_dir
from official_electra.conversion import converters
from official_electra.conversion import electra_parts
from official_electra.finetuning import glue_family
from official_electra.finetuning import tasks
from official_electra.finetuning import trainer
from official_electra.modeling import model_config
from official_electra.serving import pretraining_export
from tests.conversion import hf_reference as ref
from tests.serving import saved_model_cli

_WORDS = ["good", "bad", "movie", "is", "the", "."] + [
    f"word{index}" for index in range(ref.TINY.vocab_size - 11)]


@pytest.fixture
def imported_dir(tmp_path):
  """A random HF discriminator imported with a 60-token vocabulary."""
  vocab_file = tmp_path / "vocab.txt"
  vocab_file.write_text("\n".join(
      ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + _WORDS) + "\n")
  discriminator, _ = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  discriminator.save_pretrained(tmp_path / "hf")
  converters.import_hf(str(tmp_path / "hf"), None, str(tmp_path / "imported"),
                       vocab_file=str(vocab_file))
  return tmp_path / "imported", discriminator


def test_vocabulary_of_another_size_is_refused(tmp_path):
  vocab_file = tmp_path / "vocab.txt"
  vocab_file.write_text("\n".join(
      ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + _WORDS[:5]) + "\n")
  discriminator, _ = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  discriminator.save_pretrained(tmp_path / "hf")
  with pytest.raises(electra_parts.ConversionError,
                     match="has 10 tokens but the model's vocab_size is 60"):
    converters.import_hf(str(tmp_path / "hf"), None, str(tmp_path / "out"),
                         vocab_file=str(vocab_file))


def test_classifier_encoder_starts_from_the_imported_weights(imported_dir):
  output_dir, discriminator = imported_dir
  config, _ = checkpoint_dir.read_configs(str(output_dir))
  classifier = glue_family.build_classifier(
      config, tasks.get_task("RTE"), trainer.FinetuneHyperparameters(),
      str(output_dir))
  batch = ref.padded_batch(config.vocab_size)
  ours = classifier.encoder(
      {key: tf.constant(value) for key, value in batch.items()},
      training=False)["sequence_output"].numpy()
  with torch.no_grad():
    theirs = discriminator.electra(
        input_ids=torch.from_numpy(batch["input_word_ids"]).long(),
        attention_mask=torch.from_numpy(batch["input_mask"]).long(),
        token_type_ids=torch.from_numpy(batch["input_type_ids"]).long(),
    ).last_hidden_state.numpy()
  np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-4)


def test_finetune_main_runs_from_the_imported_directory(tmp_path, imported_dir):
  output_dir, _ = imported_dir
  glue_dir = tmp_path / "glue" / "SST-2"
  glue_dir.mkdir(parents=True)
  rng = np.random.default_rng(0)
  for split, size in (("train", 32), ("dev", 16)):
    labels = rng.integers(0, 2, size)
    rows = [f"the movie is {'good' if label else 'bad'} .\t{label}"
            for label in labels]
    (glue_dir / f"{split}.tsv").write_text(
        "sentence\tlabel\n" + "\n".join(rows) + "\n")
  config = json.loads(
      (output_dir / "model_config.json").read_text())["model"]["discriminator"]
  gin_file = tmp_path / "imported.gin"
  gin_file.write_text("include 'gin/glue/recipe.gin'\n" + "".join(
      f"glue_encoder.{field} = {value!r}\n" for field, value in config.items())
      + "glue_hyperparameters.max_seq_length = 16\n"
      "glue_hyperparameters.batch_size = 16\n"
      "glue_hyperparameters.num_train_epochs = 1\n")
  gin.clear_config()
  try:
    finetune._parse_gin([str(gin_file)], [])
    # No --vocab_file: fine-tuning finds vocab.txt beside the checkpoint.
    results = finetune.run("SST-2", str(tmp_path / "glue"), str(output_dir),
                           str(tmp_path / "run"), None, True, 1)
  finally:
    gin.clear_config()
  assert set(results["SST-2"]["median"]) == {"accuracy"}
  # The fine-tuned run records the same model config format, with the
  # imported encoder.
  finetuned = model_config.read_model_config(
      str(tmp_path / "run" / "SST-2" / "seed_0"))
  assert finetuned.model.discriminator == (
      checkpoint_dir.read_configs(str(output_dir))[0])
  assert dataclasses.asdict(finetuned.model.discriminator) == config


def test_imported_discriminator_exports_and_serves_transformers_probabilities(
    imported_dir, tmp_path):
  # The commonest import, a discriminator alone: its model_config.json is
  # enough to export it; served in a fresh process (saved_model_cli, which
  # does not import official_electra), it gives transformers' probabilities.
  output_dir, discriminator = imported_dir
  export_dir = str(tmp_path / "export" / "1")
  pretraining_export.export_pretrained(str(output_dir), export_dir)
  batch = ref.padded_batch(ref.TINY.vocab_size)
  outputs = saved_model_cli.run_signature(
      export_dir, "serving_default",
      ";".join(f"{key}={value.tolist()}" for key, value in batch.items()),
      str(tmp_path / "served"))
  expected = 1 / (1 + np.exp(-ref.hf_logits(discriminator, batch)))
  real = batch["input_mask"] == 1
  np.testing.assert_allclose(outputs["replaced_probability"][real],
                             expected[real], rtol=0, atol=1e-4)
  # The text signature packs with the imported vocabulary.
  outputs = saved_model_cli.run_signature(
      export_dir, "serve_text", "sentence=['the movie is good .']",
      str(tmp_path / "served_text"))
  ids = [2] + [5 + _WORDS.index(word) for word in
               ("the", "movie", "is", "good", ".")] + [3]
  np.testing.assert_array_equal(outputs["input_word_ids"][0, :len(ids)], ids)
  text_batch = {"input_word_ids": outputs["input_word_ids"].astype(np.int32),
                "input_mask": outputs["input_mask"].astype(np.int32),
                "input_type_ids": np.zeros_like(outputs["input_word_ids"],
                                                np.int32)}
  expected = 1 / (1 + np.exp(-ref.hf_logits(discriminator, text_batch)))
  np.testing.assert_allclose(outputs["replaced_probability"][0, :len(ids)],
                             expected[0, :len(ids)], rtol=0, atol=1e-4)
