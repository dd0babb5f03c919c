"""The towers a converted checkpoint holds, and the conversion error.

A converted checkpoint uses the project's one layout,
`tf.train.Checkpoint(model=...)` (see `modeling/checkpoints.py`): with both
towers, `model` is an `ElectraPretrainer`; with one tower only, it is a
container whose attributes have the pretrainer's names
(`discriminator_network`, `discriminator_head`, `generator_network`,
`generator_head`), so the discriminator restores the same way in both cases.
"""

import os

import tensorflow as tf

from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling.layers import discriminator_head
from official_electra.modeling.layers import masked_lm_head
from official_electra.modeling.models import electra_pretrainer
from official_electra.tokenization import vocabulary

# BERT's uncased vocabulary: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102,
# [MASK] 103. Used for the pretrainer's masking ids when no vocabulary is
# given; they do not affect the weights.
BERT_SPECIAL_TOKEN_IDS = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102,
                          "[MASK]": 103}
# The pretrainer's masking slots per sequence; not a weight, only needed to
# build it (train.py sets its own when it restores).
_MAX_PREDICTIONS_PER_SEQ = 20
# Names shown per problem line; the count is always exact.
_MAX_LISTED_NAMES = 50


class ConversionError(ValueError):
  """A checkpoint or model directory that cannot be converted; says the fix."""


def raise_if_mismatched(headline, missing, unexpected, mismatched):
  """Raises `ConversionError` when any list is non-empty.

  The message is `headline`, then one line per kind of problem (missing,
  unexpected, shape mismatch) with its count and names.

  Args:
    headline: First line: what does not fit what, and the fix.
    missing: Names the source lacks.
    unexpected: Names the source has but the model does not.
    mismatched: `name (source shape) vs (model shape)` strings.
  """
  lines = []
  for label, names in (("missing", missing), ("unexpected", unexpected),
                       ("shape mismatch (source vs model)", mismatched)):
    if names:
      names = sorted(names)
      shown = ", ".join(names[:_MAX_LISTED_NAMES])
      more = len(names) - _MAX_LISTED_NAMES
      lines.append(f"  {label} {len(names)}: {shown}" +
                   (f", ... ({more} more)" if more > 0 else ""))
  if lines:
    raise ConversionError("\n".join([headline] + lines))


class ElectraTowers(tf.Module):
  """One tower of ELECTRA with its head, under the pretrainer's attribute names.

  Args:
    discriminator_network: An `ElectraEncoder` or None.
    discriminator_head: Its `DiscriminatorHead` or None.
    generator_network: An `ElectraEncoder` or None.
    generator_head: Its `MaskedLMHead` or None.
  """

  def __init__(self, discriminator_network=None, discriminator_head=None,
               generator_network=None, generator_head=None):
    super().__init__(name="electra_towers")
    if discriminator_network is not None:
      self.discriminator_network = discriminator_network
      self.discriminator_head = discriminator_head
    if generator_network is not None:
      self.generator_network = generator_network
      self.generator_head = generator_head


def build_model(discriminator_config, generator_config, special_token_ids=None):
  """Builds (and creates the variables of) the towers the configs ask for.

  Args:
    discriminator_config: `EncoderConfig` of the discriminator, or None.
    generator_config: `EncoderConfig` of the generator, or None; with both,
      the two share one embedding block (the discriminator's shapes).
    special_token_ids: `{token: id}` of `[PAD] [UNK] [CLS] [SEP] [MASK]` for
      the pretrainer's masking; `BERT_SPECIAL_TOKEN_IDS` when None.

  Returns:
    An `ElectraPretrainer` when both configs are given, else `ElectraTowers`.
  """
  if discriminator_config is None and generator_config is None:
    raise ConversionError("nothing to convert: neither a discriminator nor a "
                          "generator was given")
  if discriminator_config is not None and generator_config is not None:
    _check_shared_embeddings(discriminator_config, generator_config)
  ids = dict(special_token_ids or BERT_SPECIAL_TOKEN_IDS)
  embeddings = encoder_config_lib.build_embeddings(
      discriminator_config or generator_config)
  discriminator = generator = None
  if discriminator_config is not None:
    discriminator = encoder_config_lib.build_encoder(
        discriminator_config, embeddings, "discriminator")
  if generator_config is not None:
    generator = encoder_config_lib.build_encoder(
        generator_config, embeddings, "generator")
  if discriminator is not None and generator is not None:
    model = electra_pretrainer.ElectraPretrainer(
        discriminator, generator, mask_token_id=ids["[MASK]"],
        excluded_token_ids=[ids[token] for token in
                            ("[PAD]", "[CLS]", "[SEP]", "[MASK]")],
        max_predictions_per_seq=_MAX_PREDICTIONS_PER_SEQ,
        initializer_range=discriminator_config.initializer_range)
  elif discriminator is not None:
    model = ElectraTowers(
        discriminator, discriminator_head.DiscriminatorHead(
            discriminator_config.hidden_size, name="discriminator_predictions"))
  else:
    model = ElectraTowers(
        generator_network=generator,
        generator_head=masked_lm_head.MaskedLMHead(
            embeddings, name="generator_predictions"))
  _create_variables(model)
  return model


def _check_shared_embeddings(discriminator_config, generator_config):
  fields = ("vocab_size", "embedding_size", "max_position_embeddings",
            "type_vocab_size")
  differing = [f"{field} {getattr(discriminator_config, field)} vs "
               f"{getattr(generator_config, field)}" for field in fields
               if getattr(discriminator_config, field) !=
               getattr(generator_config, field)]
  if differing:
    raise ConversionError(
        "the generator and discriminator share one embedding block, but their "
        f"configs differ ({'; '.join(differing)}); pass the generator and "
        "discriminator of the same ELECTRA model")


def _create_variables(model):
  inputs = {key: tf.zeros([1, 2], tf.int32) for key in
            ("input_word_ids", "input_mask", "input_type_ids")}
  for network_name, head_name in (
      ("discriminator_network", "discriminator_head"),
      ("generator_network", "generator_head")):
    network = getattr(model, network_name, None)
    if network is not None:
      getattr(model, head_name)(network(inputs)["sequence_output"])


def model_configs(model):
  """`(discriminator_config, generator_config)` of a built model (or None)."""
  configs = []
  for name in ("discriminator_network", "generator_network"):
    network = getattr(model, name, None)
    configs.append(None if network is None else
                   encoder_config_lib.EncoderConfig.from_dict(
                       {key: value
                        for key, value in network.get_config().items()
                        if key != "name"}))
  return tuple(configs)


def special_token_ids_from(vocab_file, vocab_size):
  """Special-token ids of `vocab_file`, or BERT's when it is None.

  Raises:
    ConversionError: when the file's size is not the model's `vocab_size`.
    VocabularyError: when the file is missing or unusable.
  """
  if vocab_file is None:
    return dict(BERT_SPECIAL_TOKEN_IDS)
  vocab = vocabulary.load_vocabulary(vocab_file)
  if vocab.size != vocab_size:
    raise ConversionError(
        f"{vocab_file} has {vocab.size} tokens but the model's vocab_size is "
        f"{vocab_size}; pass the vocabulary the model was trained with")
  return vocab.special_token_ids()


def check_new_output(path):
  """Raises `ConversionError` when `path` exists and is not an empty folder."""
  if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
    raise ConversionError(f"{path} already exists; pass a new output path "
                          "(nothing is overwritten)")
