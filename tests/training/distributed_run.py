"""Trains the tiny model under one strategy; run by test_distribution.py.

    python -m tests.training.distributed_run STRATEGY DATA VOCAB MODEL_DIR

STRATEGY: `one_device`, `mirrored` (two logical CPU devices, configured here
before TensorFlow initialises) or `multi_worker_mirrored` (reads TF_CONFIG).
"""

import sys

import tensorflow as tf

from tests.training import tiny_pretraining

NUM_STEPS = 3
GLOBAL_BATCH_SIZE = 4


def main(strategy_name, train_data, vocab_file, model_dir):
  if strategy_name == "mirrored":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
  elif strategy_name == "multi_worker_mirrored":
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
  else:
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  vocab_size = sum(1 for _ in open(vocab_file, encoding="utf-8"))
  tiny_pretraining.train(
      model_dir, (train_data, vocab_file, vocab_size),
      num_train_steps=NUM_STEPS, strategy=strategy, dropout_rate=0.0,
      train_batch_size=GLOBAL_BATCH_SIZE, shuffle_buffer_size=1,
      save_checkpoints_steps=1, learning_rate=1e-2, num_warmup_steps=0)


if __name__ == "__main__":
  main(*sys.argv[1:])
