"""The weights of ELECTRA: towers and heads, nothing of how they are trained.

`ElectraModel` holds the discriminator encoder (the network kept after
pretraining), the generator encoder when there is one, and the heads a
`ModelConfig` lists, under the attribute names that are the project's one
checkpoint layout (`modeling/checkpoints.py`): `model/discriminator_network`,
`model/generator_network`, `model/discriminator_head`, `model/generator_head`,
`model/main_mlm_head`, `model/copy_head`, `model/baseline_head`. Its config
is saved beside every checkpoint (`model_config.json`), so any program can
rebuild it and restore any checkpoint, pretraining's included
(`ElectraPretrainer` trains the same objects under the same names).
The pretraining procedure (masking, sampling, losses, objectives) is
`ElectraPretrainer`, which owns one.
"""

import tensorflow as tf
import tf_keras

from official_electra.modeling import checkpoints
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import errors
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling.layers import discriminator_head
from official_electra.modeling.layers import masked_lm_head

# The names the heads' layers carry (their weights' names, as in the original).
_HEAD_LAYER_NAMES = {
    "discriminator": "discriminator_predictions",
    "generator": "generator_predictions",
    "mlm": "mlm_predictions",
    "copy": "copy_predictions",
    "reinforce_baseline": "reinforce_baseline",
}


_CREATION_ORDER = ("generator", "discriminator", "mlm", "copy",
                   "reinforce_baseline")


class ElectraModel(tf.Module):
  """ELECTRA's towers and heads.

  Build one from its config with `ElectraModel.from_config`, or from networks
  already built (a pretrainer's, a conversion's) with the constructor.

  Args:
    discriminator_network: The discriminator `ElectraEncoder`, or None.
    generator_network: The generator `ElectraEncoder`, or None.
    heads: Names of the heads to create (`model_config.HEAD_ATTRIBUTES`).
    initializer_range: Standard deviation of the heads' initializers.
    name: The module's name.
  """

  def __init__(self, discriminator_network=None, generator_network=None,
               heads=(), initializer_range=0.02, name="electra_model"):
    super().__init__(name=name)
    if discriminator_network is None and generator_network is None:
      raise ValueError("an ElectraModel needs a discriminator or a generator "
                       "network")
    self.heads = tuple(sorted(set(heads)))
    model_config_lib.check_heads(self.heads, discriminator_network is not None,
                                 generator_network is not None)
    if discriminator_network is not None:
      self.discriminator_network = discriminator_network
    if generator_network is not None:
      self.generator_network = generator_network
    # Created in the pretrainer's historical order: a head's initial values
    # depend on how many were created before it under one global seed.
    for head in _CREATION_ORDER:
      if head in self.heads:
        setattr(self, model_config_lib.HEAD_ATTRIBUTES[head],
                self._new_head(head, initializer_range))

  def _new_head(self, head, initializer_range):
    name = _HEAD_LAYER_NAMES[head]
    if head in ("generator", "mlm"):
      network = (self.generator_network if head == "generator" else
                 self.discriminator_network)
      return masked_lm_head.MaskedLMHead(
          network.embedding_layer, initializer_range=initializer_range,
          name=name)
    if head in ("discriminator", "copy"):
      return discriminator_head.DiscriminatorHead(
          self.discriminator_network.hidden_size,
          initializer_range=initializer_range, name=name)
    # The REINFORCE baseline's logit at each masked slot, from the
    # generator's hidden state there (Appendix F).
    return tf_keras.layers.Dense(
        1, kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=initializer_range), name=name)

  @classmethod
  def from_config(cls, config):
    """A new model for a `ModelConfig` (variables created by `build`)."""
    main = config.main
    embeddings = encoder_config_lib.build_embeddings(main)
    discriminator = generator = None
    if config.discriminator is not None:
      discriminator = encoder_config_lib.build_encoder(
          config.discriminator, embeddings, name="discriminator")
    if config.generator is not None:
      shared = (embeddings if config.tie_embeddings or discriminator is None
                else None)
      generator = encoder_config_lib.build_encoder(
          config.generator, shared, name="generator")
    return cls(discriminator, generator, heads=config.heads,
               initializer_range=main.initializer_range)

  def parts(self):
    """`{attribute: object}` of every tower and head present (the weights'
    checkpoint keys below `model/`)."""
    names = ["discriminator_network", "generator_network"] + [
        model_config_lib.HEAD_ATTRIBUTES[head] for head in self.heads]
    return {name: getattr(self, name) for name in names
            if getattr(self, name, None) is not None}

  def build(self, seq_length=2):
    """Creates every variable (one forward pass of each tower and head on a
    dummy batch); returns the model."""
    ids = tf.zeros([1, seq_length], tf.int32)
    inputs = {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
              "input_type_ids": ids}
    positions = tf.zeros([1, 1], tf.int32)
    if getattr(self, "discriminator_network", None) is not None:
      sequence = self.discriminator_network(inputs)["sequence_output"]
      for head in ("discriminator", "copy"):
        if head in self.heads:
          getattr(self, model_config_lib.HEAD_ATTRIBUTES[head])(sequence)
      if "mlm" in self.heads:
        self.main_mlm_head(sequence, positions)
    if getattr(self, "generator_network", None) is not None:
      sequence = self.generator_network(inputs)["sequence_output"]
      if "generator" in self.heads:
        self.generator_head(sequence, positions)
      if "reinforce_baseline" in self.heads:
        self.baseline_head(tf.gather(sequence, positions, batch_dims=1))
    return self

  def restore(self, prefix):
    """Reads this model's weights from a checkpoint of the project's layout
    (pretraining, conversion) or, for a discriminator without heads, from a
    fine-tuned classifier's: every variable must be there with its shape;
    what the checkpoint holds beyond them (optimizer, other heads) is left.

    Raises:
      errors.CheckpointError: the weights do not fit (one line, with the fix).
    """
    try:
      self._restore(prefix)
    except (AssertionError, ValueError, tf.errors.InvalidArgumentError,
            tf.errors.NotFoundError) as error:
      raise errors.CheckpointError(
          f"{prefix}: does not fit the {model_config_lib.MODEL_CONFIG_FILE} "
          f"beside it ({errors.first_line(error)}); the folder is "
          "inconsistent: use a checkpoint of the run that wrote it") from None
    return prefix

  def _restore(self, prefix):
    parts = self.parts()
    if checkpoints.is_finetuned_checkpoint(prefix):
      if set(parts) != {"discriminator_network"}:
        raise ValueError(
            f"{prefix} is a fine-tuned classifier: it holds the discriminator "
            "encoder only, not "
            f"{', '.join(sorted(set(parts) - {'discriminator_network'}))}")
      root = checkpoints.discriminator_root(prefix,
                                            parts["discriminator_network"])
    else:
      root = tf.train.Checkpoint(model=tf.train.Checkpoint(**parts))
    root.read(prefix).assert_existing_objects_matched().expect_partial()
