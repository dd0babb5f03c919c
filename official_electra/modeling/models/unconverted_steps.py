"""Keras steps traced as written, without AutoGraph.

Keras traces a model's `train_step`, `test_step` and `predict_step` inside a
`tf.function`, which runs AutoGraph by default: before tracing, AutoGraph
parses and rewrites the source of every Python function the step calls (the
step, each layer's `call`, the losses and metrics, over a hundred functions
for the pretrainer) so that a Python `if`, `for` or `while` over a tensor
becomes graph control flow. The steps of this package's models have none:
their loops are `tf.while_loop`s, their branches are on Python values known
when tracing. The rewriting is then pure cost, paid by every run when it
starts, and it is not small next to a small model's whole trace: with
AutoGraph, the tiny pretrainer's first training step (build and trace) takes
6.9 CPU-seconds, without it 5.0, and a tiny classifier's first `fit` 5.2
against 4.2 (once each, on a Xeon shared with a running study; the losses
equal to the last bit). AutoGraph's cache of converted functions lasts as
long as the process, so the saving is per process, not per trace.

The cost of the saving: a step that used a tensor as a Python bool would now
fail when traced (`OperatorNotAllowedInGraphError: Using a symbolic
tf.Tensor as a Python bool is not allowed`), not become a graph branch:
write `tf.cond` or `tf.while_loop`, as the steps here do. A subclass that
overrides a step gets AutoGraph back for its own step unless it applies
`steps_without_autograph` too.
"""

import tensorflow as tf

STEPS = ("train_step", "test_step", "predict_step")


def steps_without_autograph(model_class):
  """Class decorator: the Keras steps of `model_class` (its own or the ones
  it inherits) run unconverted, and so does everything they call."""
  for name in STEPS:
    setattr(model_class, name, tf.autograph.experimental.do_not_convert(
        getattr(model_class, name)))
  return model_class
