"""The `tf.distribute` strategy of a training run, by name."""

import json
import os

from absl import logging
import tensorflow as tf

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu")


class StrategyError(ValueError):
  """An unknown strategy name, or one this machine cannot run."""


def create_strategy(name="auto", tpu=None):
  """Creates the distribution strategy.

  Args:
    name: `auto` (TPU when `tpu` is given, multi-worker mirrored when
      `TF_CONFIG` names several workers, mirrored over all GPUs when there are
      several, else one device), or one of `one_device`, `mirrored`,
      `multi_worker_mirrored` (reads `TF_CONFIG`), `tpu`.
    tpu: TPU address or name for `TPUClusterResolver` (`""` or `local` for a
      TPU VM).

  Returns:
    A `tf.distribute.Strategy`.

  Raises:
    StrategyError: with the fix.
  """
  if name not in STRATEGIES:
    raise StrategyError(f"--strategy={name!r} is unknown; choose one of "
                        f"{', '.join(STRATEGIES)}")
  if name == "auto":
    name = _auto_strategy_name(tpu)
    logging.info("--strategy=auto chose %s", name)
  if name == "tpu":
    if tpu is None:
      raise StrategyError("--strategy=tpu needs --tpu (the TPU name or "
                          "address; 'local' on a TPU VM)")
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu="" if tpu == "local" else tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  if name == "multi_worker_mirrored":
    if "TF_CONFIG" not in os.environ:
      raise StrategyError("--strategy=multi_worker_mirrored needs TF_CONFIG "
                          "(the cluster's worker addresses and this task's "
                          "index); see docs/training.md")
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "mirrored":
    return tf.distribute.MirroredStrategy()
  devices = tf.config.list_logical_devices("GPU")
  return tf.distribute.OneDeviceStrategy(
      devices[0].name if devices else "/cpu:0")


def _auto_strategy_name(tpu):
  if tpu is not None:
    return "tpu"
  cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
  if len(cluster.get("worker", [])) + len(cluster.get("chief", [])) > 1:
    return "multi_worker_mirrored"
  if len(tf.config.list_logical_devices("GPU")) > 1:
    return "mirrored"
  return "one_device"


def is_chief(strategy):
  """Whether this task writes checkpoints, logs and the config."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    return True
  task_type, task_id = resolver.task_type, resolver.task_id
  return task_type is None or task_type == "chief" or (
      task_type == "worker" and task_id == 0 and
      "chief" not in resolver.cluster_spec().as_dict())
