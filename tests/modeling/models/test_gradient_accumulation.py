"""Gradient accumulation: k micro-batches per optimizer step give the weights
of one step on the whole batch (within 1e-5), on one device and under
MirroredStrategy over two logical CPUs, for every kind of loss weight (masked
slots, every token, the masked slots of ELECTRA 15%, REINFORCE's)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from official_electra.optimization import optimizer_factory
from tests.modeling import tiny
from tests.modeling.models import accumulation_run

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


@pytest.fixture(scope="module", params=["one_device", "mirrored"])
def runs(request, tmp_path_factory):
  output = tmp_path_factory.mktemp("accumulation") / "runs.npz"
  completed = subprocess.run(
      [sys.executable, "-m", "tests.modeling.models.accumulation_run",
       request.param, str(output)], cwd=_REPO, capture_output=True,
      text=True, check=False,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=_REPO))
  assert completed.returncode == 0, completed.stderr[-3000:]
  return request.param, dict(np.load(output))


def test_accumulated_steps_equal_one_step_on_the_whole_batch(runs):
  strategy, results = runs
  k = accumulation_run.ACCUMULATION[strategy]
  rows = accumulation_run.BATCH_SIZE // accumulation_run.REPLICAS[strategy]
  for objective in accumulation_run.OBJECTIVES[strategy]:
    whole, accumulated = f"{objective}/1", f"{objective}/{k}"
    # The accumulated run did split each replica's batch: its discriminator
    # only ever ran on micro-batches (the same weights from one pass on the
    # whole batch would not show that accumulation happened).
    assert list(results[f"{whole}/discriminator_rows"]) == [rows], objective
    assert list(results[f"{accumulated}/discriminator_rows"]) == [
        rows // k], objective
    count = int(results[f"{whole}/num_variables"])
    assert count == int(results[f"{accumulated}/num_variables"]) > 20
    np.testing.assert_allclose(results[f"{accumulated}/loss"],
                               results[f"{whole}/loss"], rtol=1e-5,
                               err_msg=objective)
    moved = 0
    for index in range(count):
      name = f"variable_{index}"
      np.testing.assert_allclose(results[f"{accumulated}/{name}"],
                                 results[f"{whole}/{name}"], rtol=0,
                                 atol=1e-5, err_msg=f"{objective} {name}")
      step = np.abs(results[f"{whole}/{name}"] -
                    results[f"{whole}/initial_{index}"]).max()
      moved += step > 1e-4
    # The steps moved most weights by far more than the tolerance (not the
    # adversarial generator's in one step: at this temperature the gradient
    # of log p of its argmax samples is about 0).
    assert moved > count // 2, (objective, moved, count)


def test_micro_batches_normalised_by_their_own_weights_would_differ():
  # What the whole-batch denominators prevent: each micro-batch's loss as its
  # own mean (here averaged over micro-batches) is not the batch's loss when
  # the micro-batches hold different numbers of tokens.
  pretrainer = tiny.pretrainer("electra")
  pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
      "adamw", 1e-3, 10, 0))
  inputs = tiny.batch(batch_size=8, padded_rows=4)
  seeds = tf.constant([[1, 2, 3], [4, 5, 6]], tf.int64)
  outputs = pretrainer._forward(inputs, seeds, training=False)  # pylint: disable=protected-access
  # The two halves must also differ in their per-token losses, or the two
  # normalisations agree whatever the token counts. At initialisation they
  # differ only by chance (by 0.01-0.06 on a loss of 38 for the seeds
  # tried, so by less than 1e-3 for some weights: the test then depended on
  # the weights, hence on test order); shifting the discriminator's logits
  # of the second half (the padded rows) makes the difference large by
  # construction.
  shift = tf.constant([0.0] * 4 + [6.0] * 4)[:, None]
  outputs = dict(outputs, discriminator_logits=(
      outputs["discriminator_logits"] + shift))
  whole = float(pretrainer.compute_pretraining_losses(inputs, outputs)["loss"])
  halves = []
  for rows in (slice(0, 4), slice(4, 8)):
    part = {name: value[rows] for name, value in inputs.items()}
    part_outputs = {name: value[rows] for name, value in outputs.items()}
    halves.append(float(pretrainer.compute_pretraining_losses(
        part, part_outputs)["loss"]))
  assert abs(np.mean(halves) - whole) > 1.0, (halves, whole)
  denominators = {
      "masked": tf.reduce_sum(outputs["masked_weights"]),
      "tokens": tf.reduce_sum(tf.cast(inputs["input_mask"], tf.float32))}
  summed = 0.0
  for rows in (slice(0, 4), slice(4, 8)):
    part = {name: value[rows] for name, value in inputs.items()}
    part_outputs = {name: value[rows] for name, value in outputs.items()}
    summed += float(pretrainer.compute_pretraining_losses(
        part, part_outputs, denominators=denominators)["loss"])
  np.testing.assert_allclose(summed, whole, rtol=1e-6)


def _while_loops(function_graph):
  """`{loop name: parallel_iterations}` of every While op in the graph and
  the functions it calls."""
  graph_def = function_graph.as_graph_def()
  nodes = list(graph_def.node) + [
      node for function in graph_def.library.function
      for node in function.node_def]
  return {node.name: node.attr["parallel_iterations"].i for node in nodes
          if node.op in ("While", "StatelessWhile")}


def test_the_micro_batches_run_one_at_a_time():
  # No micro-batch depends on the previous one's activations: a loop that
  # may run iterations in parallel (tf.while_loop's default, 10) can hold
  # several micro-batches' activations at once, which is the memory
  # accumulation exists to avoid.
  loops = {}
  for steps in (1, 2):
    pretrainer = tiny.pretrainer("electra", gradient_accumulation_steps=steps)
    pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
        "adamw", 1e-3, 10, 0))
    inputs = tiny.batch(batch_size=8, padded_rows=4)
    pretrainer(inputs, training=False)  # Built: every micro-batch in the loop.
    loops[steps] = _while_loops(tf.function(
        pretrainer.train_step).get_concrete_function(inputs).graph)
  accumulation_loops = set(loops[2]) - set(loops[1])
  assert accumulation_loops, loops
  assert {loops[2][name] for name in accumulation_loops} == {1}, loops
