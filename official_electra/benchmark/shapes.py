"""The model shapes the serving and fine-tuning benchmarks measure.

`small` and `base` are the paper's discriminators
(`conversion.converters.MODEL_SIZES`); `tiny` is gin/tiny.gin's, a quick
check that a benchmark runs (its figures mean nothing).
"""

import dataclasses

MODELS = ("small", "base", "tiny")


def discriminator_config(model, vocab_size=None):
  """The discriminator's `EncoderConfig` of a named size.

  Args:
    model: one of `MODELS`.
    vocab_size: the vocabulary's size; None keeps BERT's 30522.
  """
  from official_electra.conversion import converters  # pylint: disable=g-import-not-at-top
  if model == "tiny":
    config = dataclasses.replace(
        converters.MODEL_SIZES["small"][0], embedding_size=32, hidden_size=64,
        num_layers=2, num_attention_heads=2, intermediate_size=128,
        max_position_embeddings=128)
  else:
    config = converters.MODEL_SIZES[model][0]
  if vocab_size is not None:
    config = dataclasses.replace(config, vocab_size=vocab_size)
  return config


def generator_fraction(model):
  """The generator's width as a fraction of the discriminator's."""
  from official_electra.conversion import converters  # pylint: disable=g-import-not-at-top
  return 0.5 if model == "tiny" else converters.MODEL_SIZES[model][1]


def huggingface_installed():
  """Whether torch and transformers are importable (test-only references)."""
  try:
    import torch  # pylint: disable=g-import-not-at-top,unused-import
    import transformers  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    return False
  return True
