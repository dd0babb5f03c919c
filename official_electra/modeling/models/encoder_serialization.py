"""The encoder inside a fine-tuning model's Keras config."""

import tf_keras


def serialize_encoder(encoder) -> dict:
  """The Keras config of `encoder`, for a model's `get_config`.

  Without its `build_config`: the encoder is rebuilt on its first call, and
  that entry would make deserialisation build it on float inputs, which
  embeddings reject.
  """
  config = tf_keras.layers.serialize(encoder)
  config.pop("build_config", None)
  return config


def deserialize_encoder(config: dict, custom_objects=None):
  """The encoder of `serialize_encoder`'s `config`, for a model's
  `from_config`."""
  return tf_keras.layers.deserialize(config, custom_objects=custom_objects)
