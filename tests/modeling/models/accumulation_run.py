"""Trains tiny pretrainers with and without gradient accumulation; run by
test_gradient_accumulation.py.

    python -m tests.modeling.models.accumulation_run STRATEGY OUTPUT.npz

STRATEGY: `one_device`, or `mirrored` (two logical CPU devices, configured
here before TensorFlow initialises). For each objective, two pretrainers of
the same initial weights take the same steps on the same batches, one in one
pass per step and one in micro-batches; their weights and losses are saved.
Dropout is off and the sampling temperature is so low that a sample is the
generator's argmax, so that the two runs see the same replacements; the masks
are the same by construction (drawn once for the whole batch). The rows of
every batch the discriminator runs on in training are saved too (one
micro-batch's, with accumulation).
"""

import sys

import numpy as np
import tensorflow as tf
import tf_keras

OBJECTIVES = {"one_device": ("electra", "mlm", "electra_15", "all_tokens_mlm",
                             "adversarial"),
              "mirrored": ("electra",)}
ACCUMULATION = {"one_device": 4, "mirrored": 2}
REPLICAS = {"one_device": 1, "mirrored": 2}
BATCH_SIZE = 16
STEPS = 2
# REINFORCE's gradient is that of log p at the sampling temperature, 1e4 times
# the logits' here: after the first step, rounding-level differences between
# the two runs' weights can flip a near-tie argmax. Adversarial ELECTRA is
# compared after one step (the same samples by construction).
OBJECTIVE_STEPS = {"adversarial": 1}


def _record_rows(layer, rows):
  """Adds to the set `rows` the rows of every batch `layer` runs on (when it
  runs: a micro-batch's rows are only known then)."""
  call = layer.call

  def add(count):
    rows.add(int(count))
    return count

  def recording_call(inputs, *args, **kwargs):
    recorded = tf.py_function(add, [tf.shape(tf.nest.flatten(inputs)[0])[0]],
                              tf.int32)
    with tf.control_dependencies([recorded]):
      inputs = tf.nest.map_structure(tf.identity, inputs)
    return call(inputs, *args, **kwargs)

  layer.call = recording_call


def _pretrainer(objective, accumulation, discriminator_rows):
  # Imported after the devices are configured.
  from official_electra.modeling import encoder_config  # pylint: disable=import-outside-toplevel
  from official_electra.modeling.models import electra_pretrainer  # pylint: disable=import-outside-toplevel
  from official_electra.optimization import optimizer_factory  # pylint: disable=import-outside-toplevel
  from tests.modeling import tiny  # pylint: disable=import-outside-toplevel
  tf_keras.utils.set_random_seed(3)
  config = tiny.TINY
  embeddings = encoder_config.build_embeddings(config)
  discriminator = encoder_config.build_encoder(config, embeddings,
                                               "discriminator")
  generator = None if objective == "mlm" else encoder_config.build_encoder(
      config.scaled(0.5), embeddings, "generator")
  pretrainer = electra_pretrainer.ElectraPretrainer(
      tiny.model(objective, discriminator, generator), mask_token_id=tiny.MASK_ID,
      excluded_token_ids=tiny.SPECIAL_IDS, max_predictions_per_seq=4,
      objective=objective, temperature=1e-4, seed=11,
      gradient_accumulation_steps=accumulation)
  # Adam moves each weight by about the learning rate a step, 100x the
  # tolerance of the comparison.
  optimizer = optimizer_factory.create_optimizer("adamw", 1e-3, 10, 0)
  pretrainer.compile(optimizer=optimizer)
  ids = tf.zeros([1, 24], tf.int32)
  pretrainer({"input_word_ids": ids, "input_mask": tf.ones_like(ids),
              "input_type_ids": ids}, training=False)
  optimizer.build(pretrainer.trainable_variables)
  _record_rows(discriminator, discriminator_rows)
  return pretrainer


def main(strategy_name, output):
  if strategy_name == "mirrored":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
  else:
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  from tests.modeling import tiny  # pylint: disable=import-outside-toplevel
  # 16 rows, the last 4 half padding: micro-batches differ in their weights.
  batches = [tiny.batch(batch_size=BATCH_SIZE, padded_rows=4, pattern=False,
                        seed=seed) for seed in range(STEPS)]
  results = {}
  for objective in OBJECTIVES[strategy_name]:
    for accumulation in (1, ACCUMULATION[strategy_name]):
      discriminator_rows = set()
      with strategy.scope():
        pretrainer = _pretrainer(objective, accumulation, discriminator_rows)
      initial = [variable.numpy() for variable in
                 pretrainer.trainable_variables]
      dataset = tf.data.Dataset.from_tensor_slices(
          {name: tf.stack([batch[name] for batch in batches])
           for name in batches[0]})
      history = pretrainer.fit(strategy.experimental_distribute_dataset(
          dataset), epochs=1,
          steps_per_epoch=OBJECTIVE_STEPS.get(objective, STEPS),
          verbose=0).history
      key = f"{objective}/{accumulation}"
      results[f"{key}/loss"] = np.asarray(history["loss"])
      for index, variable in enumerate(pretrainer.trainable_variables):
        results[f"{key}/variable_{index}"] = variable.numpy()
        results[f"{key}/initial_{index}"] = initial[index]
      results[f"{key}/num_variables"] = np.asarray(
          len(pretrainer.trainable_variables))
      results[f"{key}/discriminator_rows"] = np.asarray(
          sorted(discriminator_rows))
  np.savez(output, **results)


if __name__ == "__main__":
  main(*sys.argv[1:])
