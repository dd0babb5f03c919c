"""The pretrainer clips the global gradient norm to 1.0 after summing replicas.

As the original (model/optimization.py clips the gradient of the global-batch
loss), so any number of replicas takes the step one device takes. The records
are random tokens, all maskable; each replica draws its own masks.
"""

import pytest
import tensorflow as tf

from tests import module_run
from tests.modeling.models import clipping_run


def test_one_device_step_is_the_gradient_clipped_to_norm_one():
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  clipped = clipping_run.measure_step(strategy, clipping_run.CLIPPED_WEIGHTS)
  assert clipped["replica_norms"][0] > 5.0
  assert clipped["update_norm"] == pytest.approx(1.0, rel=1e-5)
  assert clipped["distance"]["sum_then_clip"] < 1e-5
  unclipped = clipping_run.measure_step(strategy,
                                        clipping_run.UNCLIPPED_WEIGHTS)
  assert unclipped["replica_norms"][0] < 0.5
  assert unclipped["update_norm"] == pytest.approx(
      unclipped["replica_norms"][0], rel=1e-3)
  assert unclipped["distance"]["sum_then_clip"] < (
      1e-3 * unclipped["update_norm"])


@pytest.fixture(scope="module")
def two_replica_steps():
  return module_run.last_json_line("tests.modeling.models.clipping_run")


def test_two_replicas_sum_their_gradients_then_clip_once(two_replica_steps):
  clipped = two_replica_steps["clipped"]
  # Each replica's own gradient is far above the norm, so clipping per replica
  # and then summing would take a step of norm up to 2, far from this one.
  assert min(clipped["replica_norms"]) > 5.0
  assert clipped["candidate_distance"] > 0.3
  assert clipped["update_norm"] == pytest.approx(1.0, rel=1e-5)
  assert clipped["distance"]["sum_then_clip"] < 1e-5
  assert clipped["distance"]["clip_then_sum"] > 0.3


def test_two_replicas_sum_their_gradients_below_the_norm(two_replica_steps):
  # Unclipped, the step is the sum of the replicas' gradients (each is its
  # share of the global-batch loss), not their mean.
  unclipped = two_replica_steps["unclipped"]
  assert sum(unclipped["replica_norms"]) < 0.5
  tolerance = 1e-3 * unclipped["update_norm"]
  assert unclipped["distance"]["sum_then_clip"] < tolerance
  assert unclipped["distance"]["mean_then_clip"] > 100 * tolerance
