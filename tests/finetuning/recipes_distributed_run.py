"""One `original_code` fine-tuning step under two replicas, beside the loss it
should come from.

    python -m tests.finetuning.recipes_distributed_run

prints, as JSON, `measure_step` under a MirroredStrategy of two logical CPU
devices (configured here before TensorFlow initialises), without clipping
(`unclipped`) and with the recipe's clipping norm 1.0 (`clipped`).
test_recipes.py also calls `measure_step` in its own process on one device.

The reference is the original's, written here from google-research/electra:
the loss is the sum over the whole batch of the per-example cross-entropies
(`run_finetuning.FinetuningModel.__init__`, `tf.reduce_sum`, of
`classification_tasks.ClassificationTask.get_prediction_module`'s
`-tf.reduce_sum(labels * log_probs, axis=-1)`), and its gradient is clipped
to global norm 1.0 (`model/optimization.create_optimizer`).
"""

import json

import numpy as np
import tensorflow as tf
import tf_keras

from official_electra.finetuning import glue_family
from official_electra.finetuning import recipes
from official_electra.finetuning import tasks
from official_electra.finetuning import trainer
from official_electra.modeling import encoder_config

# Dropout off: the step and the reference see the same forward pass.
TINY = encoder_config.EncoderConfig(
    vocab_size=40, embedding_size=16, hidden_size=32, num_layers=2,
    num_attention_heads=2, intermediate_size=64, max_position_embeddings=32,
    dropout_rate=0.0, attention_dropout_rate=0.0)
GLOBAL_BATCH_SIZE = 8
SEQ_LEN = 6


def batch(batch_size=GLOBAL_BATCH_SIZE, seed=0):
  """Random token ids and binary labels: `(features, labels)`."""
  rng = np.random.default_rng(seed)
  features = {
      "input_word_ids": rng.integers(5, TINY.vocab_size,
                                     (batch_size, SEQ_LEN)).astype(np.int32),
      "input_mask": np.ones((batch_size, SEQ_LEN), np.int32),
      "input_type_ids": np.zeros((batch_size, SEQ_LEN), np.int32)}
  return features, rng.integers(0, 2, batch_size).astype(np.int32)


def dense(gradient):
  return tf.convert_to_tensor(gradient).numpy()


def global_norm(gradients):
  """The gradient's global norm, lookups' `IndexedSlices` made dense first
  (a token used twice counts once), as the original's one-hot lookups give
  it (BERT's token types always; its word embeddings on TPU, where the
  paper's runs were made)."""
  return float(np.sqrt(sum(np.sum(np.square(dense(gradient)))
                           for gradient in gradients)))


def originals_gradient(classifier, features, labels):
  """The gradient of the original's loss on the whole batch and its norm."""
  with tf.GradientTape() as tape:
    logits = classifier(features, training=True)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    per_example = -tf.reduce_sum(tf.one_hot(labels, 2) * log_probs, axis=-1)
    loss = tf.reduce_sum(per_example)
  gradients = tape.gradient(loss, classifier.trainable_variables)
  return [dense(gradient) for gradient in gradients], global_norm(gradients)


def measure_step(strategy, gradient_clip_norm):
  """One `fit` step of the `original_code` recipe's loss with SGD(1.0), so
  the update is the gradient the classifier hands the optimizer.

  Returns:
    dict of the update's global norm, the reference gradient's norm, and the
    global norm of the update's difference from the reference gradient
    (`distance_to_sum`) and from it clipped to norm 1.0
    (`distance_to_clipped_sum`).
  """
  tf_keras.utils.set_random_seed(0)
  task = tasks.get_task("RTE")
  hyperparameters = trainer.FinetuneHyperparameters(
      recipe=recipes.ORIGINAL_CODE, dropout_rate=0.0,
      gradient_clip_norm=gradient_clip_norm)
  with strategy.scope():
    classifier = glue_family.build_classifier(TINY, task, hyperparameters)
    # Eagerly: the same train_step, without minutes of tracing on a busy CPU.
    classifier.compile(
        optimizer=tf_keras.optimizers.SGD(learning_rate=1.0),
        loss=recipes.task_loss(task, hyperparameters.loss_reduction),
        run_eagerly=True)
  features, labels = batch()
  reference, reference_norm = originals_gradient(classifier, features, labels)
  clipped_reference = [gradient * min(1.0, 1.0 / reference_norm)
                       for gradient in reference]
  before = [variable.numpy() for variable in classifier.trainable_variables]
  dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(
      GLOBAL_BATCH_SIZE)
  classifier.make_train_function()(
      iter(strategy.experimental_distribute_dataset(dataset)))
  update = [initial - variable.numpy() for initial, variable
            in zip(before, classifier.trainable_variables)]

  def distance(expected):
    return float(np.sqrt(sum(np.sum(np.square(a - b))
                             for a, b in zip(update, expected))))

  return {"update_norm": float(np.sqrt(sum(np.sum(np.square(part))
                                           for part in update))),
          "reference_norm": reference_norm,
          "distance_to_sum": distance(reference),
          "distance_to_clipped_sum": distance(clipped_reference)}


def main():
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
  strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
  print(json.dumps({"unclipped": measure_step(strategy, None),
                    "clipped": measure_step(strategy, 1.0)}))


if __name__ == "__main__":
  main()
