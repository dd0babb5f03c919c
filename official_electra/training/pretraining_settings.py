"""The settings of a pretraining run (`pretraining_run.run_pretraining`),
checked before any work: each alone (type and range, `SETTING_RULES`) and
together (batch split, objective, masking, vocabulary), each failure one
line naming the setting and the fix.
"""

from official_electra import errors
from official_electra import settings_check
from official_electra.modeling import objectives
from official_electra.modeling.layers import dynamic_masking
from official_electra.modeling.layers import span_masking
from official_electra.optimization import optimizer_factory
from official_electra.tokenization import vocabulary as vocabulary_lib
from official_electra.training import flops


class TrainingConfigError(errors.UserError):
  """Settings of the run that cannot work together; says the fix."""


_CHECK = settings_check
# What every `run_pretraining` setting must be (checked before any work).
SETTING_RULES = {
    "num_train_steps": _CHECK.POSITIVE_INTEGER,
    "train_batch_size": _CHECK.POSITIVE_INTEGER,
    "max_seq_length": _CHECK.integer(5),
    "mask_prob": _CHECK.FRACTION,
    "generator_hidden_fraction": _CHECK.FRACTION,
    "generator_layers_fraction": _CHECK.FRACTION,
    "objective": _CHECK.one_of(*objectives.OBJECTIVES),
    "uniform_generator": _CHECK.BOOLEAN,
    "unigram_generator": _CHECK.BOOLEAN,
    "lower_case": _CHECK.BOOLEAN,
    # 0 is allowed: a run that only restores or evaluates.
    "learning_rate": _CHECK.NON_NEGATIVE_NUMBER,
    "num_warmup_steps": _CHECK.NON_NEGATIVE_INTEGER,
    "optimizer": _CHECK.one_of(*optimizer_factory.OPTIMIZERS),
    "weight_decay_rate": _CHECK.RATE,
    "generator_loss_weight": _CHECK.NON_NEGATIVE_NUMBER,
    "discriminator_loss_weight": _CHECK.NON_NEGATIVE_NUMBER,
    "temperature": _CHECK.POSITIVE_NUMBER,
    "disallow_correct": _CHECK.BOOLEAN,
    "save_checkpoints_steps": _CHECK.POSITIVE_INTEGER,
    "keep_checkpoint_max": _CHECK.POSITIVE_INTEGER,
    "steps_per_execution": _CHECK.POSITIVE_INTEGER,
    "print_every_steps": _CHECK.POSITIVE_INTEGER,
    "shuffle_buffer_size": _CHECK.POSITIVE_INTEGER,
    "seed": _CHECK.integer(),
    "stop_after_steps": _CHECK.optional(_CHECK.POSITIVE_INTEGER),
    "jit_compile": _CHECK.BOOLEAN,
    "progress_bar": _CHECK.BOOLEAN,
    "verify_data_checksums": _CHECK.BOOLEAN,
    "two_stage_generator_steps": _CHECK.optional(_CHECK.POSITIVE_INTEGER),
    "adversarial_mle_steps": _CHECK.NON_NEGATIVE_INTEGER,
    "gradient_accumulation_steps": _CHECK.POSITIVE_INTEGER,
    "masking_scheme": _CHECK.one_of(*span_masking.SCHEMES),
    "flops_count": _CHECK.one_of(*flops.COUNTS),
}


def check_settings(settings, encoder):
  """Raises SettingError naming the first setting of the wrong type or range
  (`settings`: `run_pretraining`'s arguments by name), or an encoder whose
  positions cannot hold `max_seq_length`."""
  settings_check.check(settings, SETTING_RULES, "run_pretraining.")
  settings_check.check_encoder(encoder, "encoder.")
  if settings["max_seq_length"] > encoder.max_position_embeddings:
    raise settings_check.SettingError(
        f"run_pretraining.max_seq_length = {settings['max_seq_length']} is "
        "above encoder.max_position_embeddings = "
        f"{encoder.max_position_embeddings}; lower it or raise "
        "encoder.max_position_embeddings")
  settings_check.check_output_dir(settings["model_dir"], "--model_dir")


def check_run(settings, encoder, num_replicas: int):
  """Checks `run_pretraining`'s arguments (`settings`, by name) alone
  (`check_settings`) and together, on `num_replicas` replicas.

  Returns:
    The run's vocabulary (`settings["vocab_file"]`), of the encoder's size.

  Raises:
    SettingError, TrainingConfigError, VocabularyError.
  """
  check_settings(settings, encoder)
  batch_size = settings["train_batch_size"]
  if batch_size % num_replicas:
    raise TrainingConfigError(
        f"train_batch_size={batch_size} does not split over "
        f"{num_replicas} replicas: use a multiple of it")
  accumulation = settings["gradient_accumulation_steps"]
  micro_batches = num_replicas * accumulation
  if batch_size % micro_batches:
    raise TrainingConfigError(
        f"train_batch_size={batch_size} does not split into "
        f"{accumulation} micro-batches on each of "
        f"{num_replicas} replicas: use a multiple of "
        f"{micro_batches} or change gradient_accumulation_steps")
  try:
    objectives.get(settings["objective"]).check_settings(
        settings["num_train_steps"], settings["generator_hidden_fraction"],
        settings["generator_layers_fraction"], settings["uniform_generator"],
        settings["unigram_generator"], settings["disallow_correct"],
        settings["two_stage_generator_steps"],
        settings["adversarial_mle_steps"])
  except objectives.ObjectiveError as error:
    raise TrainingConfigError(str(error)) from None
  masking_draws = settings["masking_draws"]
  masking_scheme = settings["masking_scheme"]
  if masking_draws not in dynamic_masking.DRAWS:
    raise TrainingConfigError(
        f"masking_draws={masking_draws!r} is not one of "
        f"{', '.join(dynamic_masking.DRAWS)}: fix "
        "run_pretraining.masking_draws")
  if not span_masking.takes_draws(masking_scheme, masking_draws):
    raise TrainingConfigError(
        f"masking_draws={masking_draws!r} draws single tokens; "
        f"masking_scheme={masking_scheme!r} draws spans: unset "
        "run_pretraining.masking_draws or use masking_scheme='tokens'")
  vocab_file = settings["vocab_file"]
  vocabulary = vocabulary_lib.load_vocabulary(vocab_file)
  if vocabulary.size != encoder.vocab_size:
    raise TrainingConfigError(
        f"{vocab_file} has {vocabulary.size} tokens but the encoder's "
        f"vocab_size is {encoder.vocab_size}: set encoder.vocab_size="
        f"{vocabulary.size} in the gin config")
  return vocabulary
