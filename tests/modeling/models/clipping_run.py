"""One pretraining step's update beside the gradients it should come from.

    python -m tests.modeling.models.clipping_run

prints, as JSON, `measure_step` under a MirroredStrategy of two logical CPU
devices (configured here before TensorFlow initialises) for the loss weights
`CLIPPED_WEIGHTS` and `UNCLIPPED_WEIGHTS`; test_pretrainer_clipping.py also
calls `measure_step` in its own process on one device.
"""

import json

import numpy as np
import tensorflow as tf
import tf_keras

from official_electra.modeling import encoder_config
from official_electra.modeling.models import electra_pretrainer
from tests.modeling import tiny

# (generator, discriminator) loss weights: the paper's, whose gradient norm is
# well above the clipping norm 1.0 on the tiny model, and small ones whose
# gradient norm is well below it.
CLIPPED_WEIGHTS = (1.0, 50.0)
UNCLIPPED_WEIGHTS = (0.001, 0.01)
GLOBAL_BATCH_SIZE = 8


def _global_norm(arrays):
  return float(np.sqrt(sum(np.sum(np.square(array)) for array in arrays)))


def _clipped(arrays, norm):
  scale = min(1.0, 1.0 / norm)
  return [array * scale for array in arrays]


def measure_step(strategy, loss_weights):
  """One `train_step` under `strategy` with SGD(1.0), so the update is the
  gradient the pretrainer hands the optimizer.

  The batch is random tokens (every non-special token maskable). Before the
  step, each replica's raw gradient is computed with the same masking and
  sampling draws (the seed generator's state is restored in between).

  Returns:
    dict of the update's global norm, the replicas' raw gradient norms, and
    the global norm of the update's difference from each of three candidate
    rules: `sum_then_clip` (sum over replicas, then clip the global norm to
    1.0), `clip_then_sum` (clip each replica's gradient, then sum) and
    `mean_then_clip` (average over replicas, then clip).
  """
  generator_weight, discriminator_weight = loss_weights
  tf_keras.utils.set_random_seed(0)
  with strategy.scope():
    embeddings = encoder_config.build_embeddings(tiny.TINY)
    pretrainer = electra_pretrainer.ElectraPretrainer(
        tiny.model(
            "electra",
            encoder_config.build_encoder(tiny.TINY, embeddings,
                                         "discriminator"),
            encoder_config.build_encoder(tiny.TINY.scaled(0.5), embeddings,
                                         "generator")),
        mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
        max_predictions_per_seq=4, seed=1,
        generator_loss_weight=generator_weight,
        discriminator_loss_weight=discriminator_weight)
    # Eagerly: the same train_step, without minutes of tracing on a busy CPU.
    pretrainer.compile(optimizer=tf_keras.optimizers.SGD(learning_rate=1.0),
                       run_eagerly=True)
    pretrainer(tiny.batch(batch_size=2, padded_rows=1), training=False)
  variables = pretrainer.trainable_variables
  dataset = tf.data.Dataset.from_tensor_slices(
      tiny.batch(batch_size=GLOBAL_BATCH_SIZE, pattern=False)).batch(
          GLOBAL_BATCH_SIZE)
  distributed = strategy.experimental_distribute_dataset(dataset)
  random_state = pretrainer.seed_generator.state.numpy()

  def replica_gradients(iterator):
    def gradients(data):
      with tf.GradientTape() as tape:
        outputs = pretrainer(data, training=True)
        loss = pretrainer.compute_pretraining_losses(data, outputs)["loss"]
      return [tf.convert_to_tensor(gradient)
              for gradient in tape.gradient(loss, variables)]
    return strategy.run(gradients, args=(next(iterator),))

  per_replica = [
      [gradient.numpy() for gradient in strategy.experimental_local_results(
          variable_gradient)]
      for variable_gradient in replica_gradients(iter(distributed))]
  by_replica = [list(gradients) for gradients in zip(*per_replica)]
  pretrainer.seed_generator.reset(random_state)
  before = [variable.numpy() for variable in variables]
  pretrainer.make_train_function()(iter(distributed))
  update = [initial - variable.numpy()
            for initial, variable in zip(before, variables)]

  replica_norms = [_global_norm(gradients) for gradients in by_replica]
  summed = [sum(parts) for parts in zip(*by_replica)]
  mean = [part / len(by_replica) for part in summed]
  clipped_each = [_clipped(gradients, norm)
                  for gradients, norm in zip(by_replica, replica_norms)]
  candidates = {
      "sum_then_clip": _clipped(summed, _global_norm(summed)),
      "clip_then_sum": [sum(parts) for parts in zip(*clipped_each)],
      "mean_then_clip": _clipped(mean, _global_norm(mean)),
  }
  return {
      "update_norm": _global_norm(update),
      "replica_norms": replica_norms,
      "distance": {
          rule: _global_norm([a - b for a, b in zip(update, reference)])
          for rule, reference in candidates.items()},
      "candidate_distance": _global_norm(
          [a - b for a, b in zip(candidates["sum_then_clip"],
                                 candidates["clip_then_sum"])]),
  }


def main():
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
  strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
  print(json.dumps({
      "clipped": measure_step(strategy, CLIPPED_WEIGHTS),
      "unclipped": measure_step(strategy, UNCLIPPED_WEIGHTS)}))


if __name__ == "__main__":
  main()
