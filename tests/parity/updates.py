"""The update check the step-exact tests share."""

import numpy as np


def assert_same_updates(before, after, reference_after, learning_rate):
  """Our update `after - before` equals the reference's per tensor, within
  1e-4 of the tensor's largest reference update (see the tests' docstrings).

  A tensor whose gradient is 0 (the key bias: softmax ignores it) and that
  does not decay stays put on both sides: its scale is then the learning
  rate, the size of an Adam step.
  """
  assert set(after) == set(reference_after)
  for name, value in reference_after.items():
    reference_update = value - before[name]
    our_update = after[name] - before[name]
    scale = max(np.abs(reference_update).max(), learning_rate)
    np.testing.assert_allclose(our_update, reference_update, rtol=0,
                               atol=1e-4 * scale, err_msg=name)
