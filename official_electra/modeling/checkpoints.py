"""The project's one checkpoint layout, and restoring the kept encoder from it.

Pretraining checkpoints (written by `official_electra.train` and by
`official_electra.convert`) are `tf.train.Checkpoint(model=..., ...)` whose
`model` has `ElectraModel`'s attributes (`models/electra_model.py`; in
training the `ElectraPretrainer` that owns them): the discriminator lives at
`model/discriminator_network`, the generator at `model/generator_network`,
the heads beside them, and the shared embedding block is stored once. Beside
every checkpoint, `model_config.json` (`model_config.py`) says what it holds.

A fine-tuned run's seed folder (`official_electra.finetune`) holds
`tf.train.Checkpoint(classifier=ElectraClassifier)` at `checkpoint/classifier`:
its discriminator lives at `classifier/encoder`, so it too can be exported or
fine-tuned again (`is_finetuned_checkpoint`).
"""

import os

import tensorflow as tf

from official_electra import files
from official_electra.modeling import errors
from official_electra.modeling import model_config as model_config_lib

# Beside a checkpoint, what it holds (`model_config.py`).
MODEL_CONFIG_FILE = model_config_lib.MODEL_CONFIG_FILE
# The WordPiece vocabulary every model_dir keeps beside its checkpoints.
VOCAB_FILE = "vocab.txt"


CheckpointError = errors.CheckpointError


def resolve_checkpoint(path):
  """Returns a checkpoint prefix for a checkpoint prefix or a model directory.

  Raises:
    CheckpointError: when nothing loadable is there.
  """
  if model_config_lib.is_checkpoint_prefix(path):
    return path
  if tf.io.gfile.isdir(path):
    latest = _latest_or_only_checkpoint(path)
    if latest is None:
      raise CheckpointError(
          f"{path}: no checkpoint in this directory; pass a model_dir written "
          "by official_electra.train or official_electra.convert, or a "
          "checkpoint prefix such as DIR/ckpt-1000")
    return latest
  raise CheckpointError(
      f"{path}: not a checkpoint (no {path}.index) nor a directory holding one; "
      "pass a model_dir or a checkpoint prefix such as DIR/ckpt-1000")


def _latest_or_only_checkpoint(folder):
  """The latest checkpoint of `folder`'s state file, else the one checkpoint
  in it or in one of its sub-folders (a fine-tuned seed folder's
  `checkpoint/classifier`), else None."""
  state_file = os.path.join(folder, "checkpoint")
  if tf.io.gfile.exists(state_file) and not tf.io.gfile.isdir(state_file):
    latest = tf.train.latest_checkpoint(folder)
    if latest is not None:
      return latest
  indexes = (tf.io.gfile.glob(os.path.join(folder, "*.index")) +
             tf.io.gfile.glob(os.path.join(folder, "*", "*.index")))
  prefixes = sorted({path[:-len(".index")] for path in indexes})
  return prefixes[0] if len(prefixes) == 1 else None


_FINETUNED_ENCODER = "classifier/encoder/"


def is_finetuned_checkpoint(prefix):
  """Whether `prefix` is a fine-tuned classifier's checkpoint (its
  discriminator at `classifier/encoder`) rather than the pretraining layout."""
  return any(name.startswith(_FINETUNED_ENCODER)
             for name in checkpoint_reader(prefix).get_variable_to_shape_map())


def checkpoint_reader(prefix):
  """A reader of the checkpoint at `prefix`, read as a prefix even where the
  filesystem calls it a folder too (`ram://`, where `tf.train.load_checkpoint`
  would look for a `checkpoint` state file inside it)."""
  return tf.compat.v1.train.NewCheckpointReader(prefix)


def discriminator_root(prefix, encoder):
  """The `tf.train.Checkpoint` tree that reads `encoder` from `prefix`,
  whichever layout it has (pretraining or fine-tuned)."""
  if is_finetuned_checkpoint(prefix):
    return tf.train.Checkpoint(classifier=tf.train.Checkpoint(encoder=encoder))
  return tf.train.Checkpoint(
      model=tf.train.Checkpoint(discriminator_network=encoder))


def restore_discriminator(encoder, path):
  """Loads the discriminator's weights from a pretraining, imported or
  fine-tuned checkpoint.

  Args:
    encoder: A built `ElectraEncoder` of the same architecture.
    path: A model directory or a checkpoint prefix.
    tower: `discriminator` (the network kept after pretraining) or
      `generator`.

  Returns:
    The checkpoint prefix that was read.

  Raises:
    CheckpointError: listing the encoder variables the checkpoint lacks, or
      whose shapes differ; nothing is left silently at its initial value.
  """
  if not encoder.built:
    raise CheckpointError("build the encoder (call it once) before restoring")
  prefix = resolve_checkpoint(path)
  root = discriminator_root(prefix, encoder)
  try:
    status = root.read(prefix)
  except (ValueError, tf.errors.InvalidArgumentError) as error:
    raise CheckpointError(
        f"{prefix}: the discriminator in this checkpoint does not fit the "
        f"configured architecture ({errors.first_line(error)}); use the "
        "gin/model config the checkpoint was trained with") from None
  try:
    status.assert_existing_objects_matched()
  except AssertionError as error:
    raise CheckpointError(
        f"{prefix}: variables of the configured discriminator are missing "
        f"from the checkpoint ({errors.first_line(error)}); check that it is "
        "an ELECTRA pretraining checkpoint of the same architecture") from None
  status.expect_partial()
  return prefix


def recorded_encoder_config(path, tower="discriminator"):
  """A tower's `EncoderConfig` recorded beside a checkpoint, or None.

  Reads the folder's model config (`model_config.read_model_config`).

  Args:
    path: A model directory or a checkpoint prefix.

  Returns:
    An `EncoderConfig`, or None when the folder records none (or not that
    tower).

  Raises:
    ModelConfigError (a `CheckpointError`): when the recorded file is
      unreadable.
  """
  recorded = model_config_lib.read_model_config(path)
  return None if recorded is None else getattr(recorded.model, tower)


def encoder_config_differences(recorded, bindings):
  """`["field: checkpoint X, gin Y", ...]` for each binding that differs."""
  return [f"{name}: checkpoint {getattr(recorded, name)!r}, gin {value!r}"
          for name, value in sorted(bindings.items())
          if getattr(recorded, name, value) != value]


def dropout_random_state(model):
  """The dropout layers' `tf.random.Generator`s, created now, as one object.

  Keras creates a layer's generator lazily, at its first training call, and
  leaves it out of the model's checkpoint; a resumed run would then draw other
  dropout masks. Creating them before a restore and saving this object beside
  the model (`tf.train.Checkpoint(model=..., dropout_random_state=...)`, not
  inside it: `model/` keeps the project's layout) makes resuming exact. Needs
  `tf_keras.backend.experimental.enable_tf_random_generator()` before the
  model is built.

  Args:
    model: A `tf_keras` model.

  Returns:
    A `tf.train.Checkpoint` holding one generator per dropout layer.
  """
  generators = {}
  for module in model.submodules:
    random_generator = getattr(module, "_random_generator", None)
    if random_generator is None or not hasattr(random_generator, "_maybe_init"):
      continue
    random_generator._maybe_init()  # pylint: disable=protected-access
    generator = random_generator._generator  # pylint: disable=protected-access
    if generator is not None:
      # Keyed by position: layer names carry process-wide counters.
      generators[f"generator_{len(generators)}"] = generator
  return tf.train.Checkpoint(**generators)


def write_checkpoint_folder(model, folder, config, vocab_file=None):
  """Writes `model` as `folder/ckpt-0` with `config` and the vocabulary.

  The checkpoint is `tf.train.Checkpoint(model=model)` (the one layout) with
  its `checkpoint` state file, beside `model_config.json` and, when given, a
  copy of `vocab_file` as `vocab.txt`. Everything is written to a staging
  folder and published whole, `model_config.json` last, so a failed or
  killed save leaves no complete-looking folder.

  Args:
    model: the object saved under `model/` (an `ElectraModel`, or a
      `tf.train.Checkpoint` of some of its attributes).
    folder: a new (or empty) folder; the caller checks that it is.
    config: the `model_config.ModelConfig` recorded.
    vocab_file: the vocabulary copied in, or None.

  Returns:
    The checkpoint prefix written, `<folder>/ckpt-0`.
  """
  staging = files.staging_folder(folder)
  try:
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), staging,
                               max_to_keep=1).save(checkpoint_number=0)
    if vocab_file is not None:
      files.copy(vocab_file, os.path.join(staging, VOCAB_FILE))
    model_config_lib.write_model_config(staging, config)
    files.publish_folder(staging, folder,
                         last=model_config_lib.MODEL_CONFIG_FILE)
  except BaseException:
    files.remove_tree(staging)
    raise
  return os.path.join(folder, "ckpt-0")
