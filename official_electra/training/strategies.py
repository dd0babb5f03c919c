"""The `tf.distribute` strategy of a training run, by name.

The strategies themselves come from Model Garden's
`official.common.distribute_utils.get_distribution_strategy` (its TPU setup
does more than a plain `TPUStrategy`: no remote connect for a TPU VM's
`local`, and the device assignment v5p needs). What this module adds:
`auto` (the strategy this machine and `TF_CONFIG` call for), one-line errors
with the fix before anything starts, GPUs counted for `mirrored` and
`one_device`, and `MultiWorkerMirroredStrategy` created through its stable
API (Model Garden's uses the deprecated `experimental` alias, which logs a
deprecation warning in every run).
"""

import json
import os

from absl import logging
from official.common import distribute_utils
import tensorflow as tf

from official_electra import errors

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu")


class StrategyError(errors.UserError):
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
    return distribute_utils.get_distribution_strategy(
        "tpu", tpu_address="" if tpu == "local" else tpu)
  if name == "multi_worker_mirrored":
    if "TF_CONFIG" not in os.environ:
      raise StrategyError("--strategy=multi_worker_mirrored needs TF_CONFIG "
                          "(the cluster's worker addresses and this task's "
                          "index); see docs/training.md")
    return tf.distribute.MultiWorkerMirroredStrategy()
  num_gpus = len(tf.config.list_logical_devices("GPU"))
  if name == "mirrored":  # Every GPU, else the CPU.
    return distribute_utils.get_distribution_strategy("mirrored",
                                                      num_gpus=num_gpus)
  return distribute_utils.get_distribution_strategy(
      "one_device", num_gpus=min(num_gpus, 1))


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
