"""The towers a converted checkpoint holds, and the conversion error.

A converted checkpoint uses the project's one layout,
`tf.train.Checkpoint(model=ElectraModel)` (see `modeling/checkpoints.py`):
the weights-only model with the towers present and each tower's head
(`discriminator_network`, `discriminator_head`, `generator_network`,
`generator_head`), so the discriminator restores the same way whatever wrote
the checkpoint.
"""


from official_electra import errors
from official_electra import files
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling.models import electra_model
from official_electra.tokenization import vocabulary

# BERT's uncased vocabulary: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102,
# [MASK] 103. Recorded when no vocabulary is given.
BERT_SPECIAL_TOKEN_IDS = model_config_lib.BERT_SPECIAL_TOKEN_IDS
# Names shown per problem line; the count is always exact.
_MAX_LISTED_NAMES = 50


class ConversionError(errors.UserError):
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


def build_model(discriminator_config, generator_config):
  """Builds (and creates the variables of) the towers the configs ask for.

  Args:
    discriminator_config: `EncoderConfig` of the discriminator, or None.
    generator_config: `EncoderConfig` of the generator, or None; with both,
      the two share one embedding block (the discriminator's shapes).

  Returns:
    An `ElectraModel` with each tower's head.
  """
  if discriminator_config is None and generator_config is None:
    raise ConversionError("nothing to convert: neither a discriminator nor a "
                          "generator was given")
  if discriminator_config is not None and generator_config is not None:
    _check_shared_embeddings(discriminator_config, generator_config)
  return electra_model.ElectraModel.from_config(
      model_config(discriminator_config, generator_config)).build()


def model_config(discriminator_config, generator_config,
                 special_token_ids=None, lower_case=True):
  """The `ModelConfig` of an import: the towers given, each with its head,
  tied embeddings, sequences as long as the position table."""
  main = discriminator_config or generator_config
  heads = (("discriminator",) if discriminator_config else ()) + (
      ("generator",) if generator_config else ())
  return model_config_lib.ModelConfig(
      discriminator=discriminator_config, generator=generator_config,
      tie_embeddings=True, heads=heads,
      special_token_ids=dict(special_token_ids or BERT_SPECIAL_TOKEN_IDS),
      lower_case=lower_case, max_seq_length=main.max_position_embeddings)


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
  if files.exists(path) and (not files.isdir(path) or files.listdir(path)):
    raise ConversionError(f"{path} already exists; pass a new output path "
                          "(nothing is overwritten)")
