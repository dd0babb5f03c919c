"""Random Hugging Face ELECTRA models and our logits, for conversion tests."""

import numpy as np
import tensorflow as tf
import torch
import transformers

from official_electra.conversion import hf_files
from official_electra.modeling import encoder_config

TINY = encoder_config.EncoderConfig(
    vocab_size=60, embedding_size=16, hidden_size=32, num_layers=2,
    num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
# Generator width 8 != embedding width 16: it has an `embeddings_project`.
TINY_GENERATOR = TINY.scaled(0.25)
SMALL = encoder_config.EncoderConfig()
SMALL_GENERATOR = SMALL.scaled(0.25)


def hf_config(config, tower):
  return transformers.ElectraConfig(
      **hf_files.hf_config_from_encoder(config, tower))


def random_hf_models(discriminator_config, generator_config, seed=0,
                     stddev=0.05):
  """An `ElectraForPreTraining` and `ElectraForMaskedLM` with shared embeddings.

  Every parameter (LayerNorms and biases too) is drawn at random so that a
  parameter left unconverted changes the logits.
  """
  torch.manual_seed(seed)
  discriminator = transformers.ElectraForPreTraining(
      hf_config(discriminator_config, "discriminator"))
  generator = transformers.ElectraForMaskedLM(
      hf_config(generator_config, "generator"))
  with torch.no_grad():
    for model in (discriminator, generator):
      for name, parameter in model.named_parameters():
        parameter.normal_(1.0 if name.endswith("LayerNorm.weight") else 0.0,
                          stddev)
    generator.electra.embeddings.load_state_dict(
        discriminator.electra.embeddings.state_dict())
  return discriminator.eval(), generator.eval()


def padded_batch(vocab_size, batch_size=3, seq_len=12, seed=0):
  """int32 ids, mask and type ids `[batch, seq_len]`, rows 1 and 2 padded."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(1, vocab_size, size=(batch_size, seq_len)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1, 7:] = 0
  mask[2, 4:] = 0
  ids[mask == 0] = 0
  type_ids = np.zeros_like(ids)
  type_ids[:, seq_len // 2:] = 1
  return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": type_ids}


def hf_logits(model, batch):
  with torch.no_grad():
    return model(
        input_ids=torch.from_numpy(batch["input_word_ids"]).long(),
        attention_mask=torch.from_numpy(batch["input_mask"]).long(),
        token_type_ids=torch.from_numpy(batch["input_type_ids"]).long(),
    ).logits.numpy()


def our_logits(model, tower, batch):
  """Eval-mode logits of one tower: `[b, s]` or (generator) `[b, s, vocab]`."""
  inputs = {key: tf.constant(value) for key, value in batch.items()}
  sequence = getattr(model, f"{tower}_network")(
      inputs, training=False)["sequence_output"]
  return getattr(model, f"{tower}_head")(sequence).numpy()
