"""One pretraining run: build, resume, `fit`, checkpoint (no gin, no flags).

`official_electra.train` configures `run_pretraining` with gin; tests and other
programs call it with explicit arguments.
"""

import os
import tempfile

from absl import logging
import tensorflow as tf
import tf_keras

from official_electra import errors
from official_electra import files
from official_electra import preemption
from official_electra.data import dataset_info
from official_electra.data import pretraining_dataloader
from official_electra.data import pretraining_files
from official_electra.modeling import checkpoints
from official_electra.modeling import objectives
from official_electra.modeling.layers import span_masking
from official_electra.modeling.models import electra_pretrainer
from official_electra.optimization import optimizer_factory
from official_electra.training import architecture as architecture_lib
from official_electra.training import callbacks
from official_electra.training import flops
from official_electra.training import pretraining_settings
from official_electra.training import resumable_input
from official_electra.training import strategies

VOCAB_FILE = checkpoints.VOCAB_FILE
# The pretrainer's attributes holding weights (its checkpoint keys).
_PRETRAINED_PARTS = ("discriminator_network", "generator_network",
                     "generator_head", "discriminator_head", "main_mlm_head",
                     "copy_head")


TrainingConfigError = pretraining_settings.TrainingConfigError


def run_pretraining(
    model_dir, train_data, vocab_file, encoder, strategy,
    num_train_steps, train_batch_size=128, max_seq_length=128,
    mask_prob=0.15, generator_hidden_fraction=0.25,
    generator_layers_fraction=1.0, objective="electra",
    uniform_generator=False, unigram_generator=False, lower_case=True,
    learning_rate=5e-4,
    num_warmup_steps=10000, optimizer="adamw", weight_decay_rate=0.01,
    generator_loss_weight=1.0, discriminator_loss_weight=50.0,
    temperature=1.0, disallow_correct=False,
    masking_draws="without_replacement", masking_scheme="tokens",
    save_checkpoints_steps=1000,
    keep_checkpoint_max=5,
    steps_per_execution=1, print_every_steps=100, shuffle_buffer_size=10000,
    seed=0, stop_after_steps=None, init_checkpoint=None,
    mixed_precision="float32", jit_compile=False, progress_bar=True,
    write_config=None, verify_data_checksums=False,
    two_stage_generator_steps=None, adversarial_mle_steps=0,
    gradient_accumulation_steps=1, flops_count=flops.PAPER):
  """Pretrains, resuming from the latest checkpoint in `model_dir`.

  Args:
    model_dir: output folder: checkpoints (`ckpt-<step>`), `model_config.json`,
      `vocab.txt`, TensorBoard logs (`train/`), `train_metrics.jsonl`.
    train_data: TFRecord glob(s) or a dataset directory.
    vocab_file: the WordPiece vocabulary the data was built with.
    encoder: the discriminator's `EncoderConfig`.
    strategy: a `tf.distribute.Strategy`.
    num_train_steps: total steps (the LR decays to 0 there).
    train_batch_size: global batch size (all replicas): the examples of one
      optimizer step, accumulated micro-batches included.
    max_seq_length: the records' length.
    mask_prob: fraction of tokens masked.
    generator_hidden_fraction: generator width / discriminator width.
    generator_layers_fraction: generator depth / discriminator depth.
    objective: an `ElectraPretrainer` objective.
    uniform_generator: sample replacements uniformly (the original code's
      ablation).
    unigram_generator: sample replacements from the data's token frequencies
      (`token_counts.txt` of the dataset; the paper's unigram generator).
    lower_case: whether the vocabulary is uncased.
    learning_rate: peak learning rate.
    num_warmup_steps: linear warm-up steps.
    optimizer: `adamw` or `lamb`.
    weight_decay_rate: decoupled weight decay.
    generator_loss_weight: weight of the generator's MLM loss.
    discriminator_loss_weight: weight of the RTD loss (50 in the paper).
    temperature: sampling temperature.
    disallow_correct: never sample the original token at a masked slot (the
      original's option of that name; off in the paper).
    masking_draws: `without_replacement` (distinct masked positions) or the
      original's `with_replacement` draws (`DynamicMasking`); `tokens`
      masking only.
    masking_scheme: what is masked: `tokens` (the paper's), `spans`
      (SpanBERT's spans of whole words, lengths Geo(0.2) clipped at 10 words)
      or `whole_words` (`SpanMasking`), with the same budget and
      special-token rules. Recorded: a run resumes with its own.
    save_checkpoints_steps: checkpoint cadence.
    keep_checkpoint_max: checkpoints kept.
    steps_per_execution: steps per `tf.function` call (and per log record).
    print_every_steps: stdout cadence.
    shuffle_buffer_size: records in the shuffle buffer (a training stream
      permutes each window of this many records).
    seed: seed of initialisation, data order, masking, sampling and dropout.
    stop_after_steps: end this run (with a checkpoint) at this step.
    init_checkpoint: weights to start from (no optimizer state), for a fresh
      model_dir; a model_dir or checkpoint prefix.
    mixed_precision: the Keras policy already set (`float32`,
      `mixed_float16`, `mixed_bfloat16`); `mixed_float16` adds loss scaling.
    jit_compile: XLA-compile the train step.
    progress_bar: show Keras' progress bar.
    write_config: optional `model_dir -> None`, called on the chief once the
      model is configured (the entry point writes the gin config).
    verify_data_checksums: before training, compare every shard's sha256
      with `dataset_info.json` (reads the data once). Without it the start
      checks only that every listed shard is there with its size.
    two_stage_generator_steps: objective `two_stage` (and only it): the
      steps of stage 1 (the masked LM alone); stage 2 (the discriminator
      alone, generator frozen) runs from there to `num_train_steps`, so
      raising `num_train_steps` of a finished run trains stage 2 longer.
      Each stage has its own warm-up and linear decay.
    adversarial_mle_steps: objective `adversarial`: the first steps in
      which the generator is trained by MLE (its MLM loss) instead of
      REINFORCE.
    gradient_accumulation_steps: micro-batches per optimizer step. Each
      replica's `train_batch_size / replicas` examples are split into this
      many micro-batches, run one after another; their gradients are summed
      (losses normalised by the whole batch's weights, masks drawn for the
      whole batch) and clipped once. Memory is one micro-batch's; the
      learning rate, FLOPs, logs and checkpoints count optimizer steps.
    flops_count: how the logged `train_flops` are counted (`flops.COUNTS`):
      `paper` (the paper's compute axis, Clark et al., 2020, Appendix D) or
      `matmul` (matrix multiplications only, as the benchmarks count them).
      Each log record names it (`flops_count`).

  Returns:
    dict: `step` (the final step), `checkpoint` (latest prefix).

  Raises:
    SettingError, TrainingConfigError, ArchitectureMismatchError,
    CheckpointError, VocabularyError, PretrainingDataError, DatasetInfoError,
    TrainingDivergedError.
    preemption.Preempted: on SIGTERM, after saving a checkpoint.
  """
  vocabulary = pretraining_settings.check_run(
      dict(locals()), encoder, strategy.num_replicas_in_sync)
  train_files = pretraining_files.resolve_files(train_data)
  pretraining_files.check_files(
      train_files, max_seq_length, encoder.vocab_size, vocab_file,
      verify_checksums=verify_data_checksums)
  unigram_counts = (_token_counts(train_files, encoder.vocab_size)
                    if unigram_generator else None)
  architecture = architecture_lib.PretrainingArchitecture(
      encoder=encoder, generator_hidden_fraction=generator_hidden_fraction,
      generator_layers_fraction=generator_layers_fraction,
      objective=objective, uniform_generator=uniform_generator,
      unigram_generator=unigram_generator, max_seq_length=max_seq_length,
      mask_prob=mask_prob, special_token_ids=vocabulary.special_token_ids(),
      lower_case=lower_case, masking_scheme=masking_scheme)
  chief = strategies.is_chief(strategy)
  files.makedirs(model_dir)
  recorded = architecture_lib.read_architecture(model_dir)
  latest = tf.train.latest_checkpoint(model_dir)
  if recorded is None and latest is not None:
    raise checkpoints.CheckpointError(
        f"{model_dir}: holds a checkpoint that no pretraining run wrote (an "
        "import, or a folder without its model_config.json); start from it "
        f"with --init_checkpoint={model_dir} and a new --model_dir")
  if recorded is not None and latest is not None:
    architecture_lib.check_same_architecture(model_dir, recorded, architecture)
  if chief:
    architecture_lib.write_architecture(model_dir, architecture)
    files.copy_if_absent(vocab_file, os.path.join(model_dir, VOCAB_FILE))
    if write_config is not None:
      write_config(model_dir)

  tf_keras.utils.set_random_seed(seed)
  # Dropout then draws from tf.random.Generator states that are checkpointed.
  tf_keras.backend.experimental.enable_tf_random_generator()
  with strategy.scope():
    pretrainer = architecture_lib.build_pretrainer(
        architecture, seed, generator_loss_weight, discriminator_loss_weight,
        temperature, disallow_correct=disallow_correct,
        masking_draws=masking_draws,
        unigram_counts=unigram_counts,
        adversarial_mle_steps=adversarial_mle_steps,
        gradient_accumulation_steps=gradient_accumulation_steps,
        continuation_token_ids=span_masking.continuation_token_ids(
            vocabulary.tokens))
    train_optimizer = optimizer_factory.create_optimizer(
        optimizer, learning_rate, num_train_steps, num_warmup_steps,
        weight_decay_rate, restart_step=two_stage_generator_steps)
    if mixed_precision == "mixed_float16":
      train_optimizer = tf_keras.mixed_precision.LossScaleOptimizer(
          train_optimizer)
    pretrainer.compile(optimizer=train_optimizer,
                       steps_per_execution=steps_per_execution,
                       jit_compile=jit_compile)
    _build(pretrainer, train_optimizer, max_seq_length)
    checkpoint = tf.train.Checkpoint(
        model=pretrainer, optimizer=train_optimizer,
        dropout_random_state=checkpoints.dropout_random_state(pretrainer))
  if latest is not None:
    _restore(checkpoint, latest)
    logging.info("resumed from %s", latest)
  elif init_checkpoint:
    _initialize_from(pretrainer, init_checkpoint)
  manager = tf.train.CheckpointManager(
      checkpoint, _checkpoint_dir(model_dir, strategy, chief),
      max_to_keep=keep_checkpoint_max, step_counter=train_optimizer.iterations)

  completed_steps = int(train_optimizer.iterations.numpy())
  last_step = min(num_train_steps, stop_after_steps or num_train_steps)
  if completed_steps >= last_step:
    logging.info("nothing to do: step %d of %d", completed_steps, last_step)
    return {"step": completed_steps, "checkpoint": manager.latest_checkpoint}
  step_flops = flops.train_flops_schedule(
      encoder, architecture.generator_config(), objective, max_seq_length,
      architecture.max_predictions_per_seq, train_batch_size,
      two_stage_generator_steps, count=flops_count)
  sigterm = preemption.SigtermFlag()
  checkpoint_callback = preemption.CheckpointCallback(
      preemption.StepCheckpoints(manager, train_optimizer.iterations,
                                 save_checkpoints_steps), sigterm)
  divergence_check = callbacks.DivergenceCheck(manager, model_dir)
  logger = callbacks.TrainingLogger(
      model_dir if chief else None, train_batch_size, max_seq_length,
      step_flops, print_every_steps)

  def fit(first_step, end_step):
    dataset = strategy.distribute_datasets_from_function(
        resumable_input.make_dataset_fn(
            train_data, train_batch_size, max_seq_length, encoder.vocab_size,
            seed, first_step, strategy.num_replicas_in_sync,
            shuffle_buffer_size))
    try:
      with sigterm:
        pretrainer.fit(dataset, epochs=1,
                       steps_per_epoch=end_step - first_step,
                       callbacks=[logger, divergence_check,
                                  checkpoint_callback],
                       verbose=1 if progress_bar else 0)
        checkpoint_callback.finish()
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
      if not _is_data_error(error):
        raise
      raise _corrupt_data_error(error, train_files, model_dir,
                                manager.latest_checkpoint) from None
    except (preemption.Preempted, callbacks.TrainingDivergedError):
      if not chief:
        files.remove_tree(manager.directory)
      raise
    return int(train_optimizer.iterations.numpy())

  if objectives.get(objective).two_stage:
    switch = two_stage_generator_steps
    if (pretrainer.current_stage == electra_pretrainer.GENERATOR_STAGE
        and completed_steps < switch):
      completed_steps = fit(completed_steps, min(last_step, switch))
    if completed_steps < last_step:
      if pretrainer.current_stage == electra_pretrainer.GENERATOR_STAGE:
        pretrainer.start_discriminator_stage()
        logging.info("Two-Stage: stage 2 from step %d: the discriminator "
                     "goes on from the masked LM, frozen as the generator",
                     completed_steps)
        print(f"step {completed_steps}: Two-Stage stage 2 begins (the "
              "discriminator goes on from the masked LM of stage 1, frozen "
              "as the generator)", flush=True)
      fit(completed_steps, last_step)
  else:
    fit(completed_steps, last_step)
  if not chief:
    files.remove_tree(manager.directory)
  return {"step": int(train_optimizer.iterations.numpy()),
          "checkpoint": manager.latest_checkpoint}


def _token_counts(train_files, vocab_size):
  """The summed token counts of the datasets the files belong to."""
  totals = [0] * vocab_size
  for directory in sorted({os.path.dirname(path) for path in train_files}):
    for token_id, count in enumerate(
        dataset_info.read_token_counts(directory, vocab_size)):
      totals[token_id] += count
  return totals


def _is_data_error(error):
  """A record that cannot be read (CRC) or parsed as a pretraining Example."""
  if isinstance(error, tf.errors.DataLossError):
    return True
  message = error.message
  return "Example" in message or ("Key: " in message and "Feature" in message)


def _op_error_summary(error):
  """`corrupted record at 21945` out of a graph error's multi-line message."""
  lines = [line.strip() for line in error.message.splitlines()
           if line.strip()]
  useful = [line for line in lines if not line.startswith(
      ("Graph execution error", "Detected at node", "File ", "[["))]
  return (useful[-1] if useful else lines[0]).split(" [Op:")[0]


def _corrupt_data_error(error, train_files, model_dir, latest_checkpoint):
  """The one-line error of a record that failed in training: which shard, the
  fix, and the last checkpoint (kept: nothing was saved after the failure)."""
  shard = pretraining_files.find_unreadable_file(train_files)
  where = (shard if shard is not None
           else f"a shard of {os.path.commonpath(train_files)}")
  checkpoint = (os.path.basename(latest_checkpoint) if latest_checkpoint
                else "none yet")
  return pretraining_dataloader.PretrainingDataError(
      f"{where}: a record cannot be read ({_op_error_summary(error)}): "
      f"training stopped; the last good checkpoint in {model_dir} is "
      f"{checkpoint}; {dataset_info.REPAIR_FIX}, then rerun this command to "
      "resume")


def _build(pretrainer, train_optimizer, max_seq_length):
  """Creates every variable (model and optimizer slots) before a restore."""
  ids = tf.zeros([1, max_seq_length], tf.int32)
  pretrainer({"input_word_ids": ids, "input_mask": tf.ones_like(ids),
              "input_type_ids": ids}, training=False)
  optimizer = getattr(train_optimizer, "inner_optimizer", train_optimizer)
  optimizer.build(pretrainer.trainable_variables)


def _restore(checkpoint, prefix):
  try:
    checkpoint.restore(prefix).assert_existing_objects_matched()
  except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as error:
    raise checkpoints.CheckpointError(
        f"{prefix}: cannot resume from this checkpoint "
        f"({errors.first_line(error)}); it was written by another model "
        "or version: use a new --model_dir") from None


def _initialize_from(pretrainer, init_checkpoint):
  """Weights of a pretrained model (no optimizer state, step 0)."""
  prefix = checkpoints.restore_discriminator(pretrainer.discriminator_network,
                                             init_checkpoint)
  # Not `model=pretrainer`: the compiled model tracks its optimizer, whose
  # step and slots must stay fresh.
  towers_and_heads = {
      name: getattr(pretrainer, name) for name in _PRETRAINED_PARTS
      if getattr(pretrainer, name, None) is not None}
  tf.train.Checkpoint(model=tf.train.Checkpoint(**towers_and_heads)).read(
      prefix).expect_partial()
  logging.info("initialised the model from %s", prefix)


def _checkpoint_dir(model_dir, strategy, chief):
  """Non-chief workers of a multi-worker run save to a scratch folder (all
  workers take part in a save; only the chief's copy is kept)."""
  if chief:
    return model_dir
  task_id = strategy.cluster_resolver.task_id
  return tempfile.mkdtemp(prefix=f"worker_{task_id}_")
