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


def test_a_lookup_gradient_is_clipped_by_its_dense_norm():
  """A token used twice gives an `IndexedSlices` gradient with two rows; the
  norm clipped is that of their sum (the dense gradient's), as the
  original's one-hot lookups give, not the rows' norms added."""
  from official_electra.modeling.models import gradient_clipping  # pylint: disable=g-import-not-at-top
  rows = tf.constant([[3.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
  sparse = tf.IndexedSlices(rows, tf.constant([1, 1, 0]),
                            tf.constant([3, 2]))
  other = tf.constant([2.0])
  clipped = gradient_clipping.clip_global_batch_gradients([sparse, other],
                                                          1.0)
  dense = tf.constant([[0.0, 4.0], [6.0, 0.0], [0.0, 0.0]])
  norm = float(tf.linalg.global_norm([dense, other]))  # sqrt(56), not 42.
  assert norm == pytest.approx(56 ** 0.5)
  assert isinstance(clipped[0], tf.Tensor)
  tf.debugging.assert_near(clipped[0], dense / norm)
  tf.debugging.assert_near(clipped[1], other / norm)
