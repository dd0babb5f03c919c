"""Tiny configurations and batches shared by the modeling tests."""

import numpy as np
import tensorflow as tf

from official_electra.modeling import encoder_config
from official_electra.modeling import objectives
from official_electra.modeling.models import electra_model
from official_electra.modeling.models import electra_pretrainer

PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = 0, 1, 2, 3, 4
SPECIAL_IDS = (PAD_ID, CLS_ID, SEP_ID, MASK_ID)

TINY = encoder_config.EncoderConfig(
    vocab_size=60, embedding_size=16, hidden_size=32, num_layers=2,
    num_attention_heads=2, intermediate_size=64, max_position_embeddings=32,
    dropout_rate=0.0, attention_dropout_rate=0.0)


def batch(batch_size=8, seq_len=24, padded_rows=4, real_len=16, pattern=True,
          seed=0):
  """A batch shaped like pretraining data: `[CLS] tokens [SEP] [PAD]...`.

  With `pattern`, each row alternates two tokens of its own (any visible token
  of a row tells the masked ones, so a tiny model can fit the batch quickly);
  otherwise tokens are random.
  """
  if pattern:
    rows = np.arange(batch_size)[:, None]
    body = 5 + (2 * rows + np.arange(seq_len)[None, :] % 2) % (
        TINY.vocab_size - 5)
  else:
    body = np.random.default_rng(seed).integers(
        5, TINY.vocab_size, size=(batch_size, seq_len))
  ids = body.astype(np.int32)
  ids[:, 0] = CLS_ID
  ids[:, -1] = SEP_ID
  ids[batch_size - padded_rows:, real_len:] = PAD_ID
  ids[batch_size - padded_rows:, real_len - 1] = SEP_ID
  mask = (ids != PAD_ID).astype(np.int32)
  return {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask),
          "input_type_ids": tf.zeros_like(tf.constant(mask))}


def model(objective, discriminator, generator):
  """The `ElectraModel` of two networks with the heads `objective` trains."""
  return electra_model.ElectraModel(
      discriminator, generator,
      heads=objectives.get(objective).heads(generator is not None))


def pretrainer(objective="electra", config=TINY, generator_fraction=0.5,
               uniform_generator=False, seed=1, max_predictions_per_seq=4,
               untied_generator_embeddings=False, disallow_correct=False,
               masking_draws="without_replacement", unigram_counts=None,
               gradient_accumulation_steps=1):
  """A tiny `ElectraPretrainer` with a tied (or untied) generator (for
  Two-Stage, one of the discriminator's size with its own embeddings)."""
  embeddings = encoder_config.build_embeddings(config)
  discriminator = encoder_config.build_encoder(config, embeddings,
                                               "discriminator")
  generator = None
  if objective == "two_stage":
    # Two-Stage's generator: the discriminator's size, its own embeddings.
    generator = encoder_config.build_encoder(config, None, "generator")
  elif objective != "mlm" and not uniform_generator and unigram_counts is None:
    generator = encoder_config.build_encoder(
        config.scaled(generator_fraction),
        None if untied_generator_embeddings else embeddings, "generator")
  return electra_pretrainer.ElectraPretrainer(
      model(objective, discriminator, generator), mask_token_id=MASK_ID,
      excluded_token_ids=SPECIAL_IDS,
      max_predictions_per_seq=max_predictions_per_seq, objective=objective,
      uniform_generator=uniform_generator, unigram_counts=unigram_counts,
      seed=seed,
      disallow_correct=disallow_correct, masking_draws=masking_draws,
      gradient_accumulation_steps=gradient_accumulation_steps)
