"""The models' Keras steps are traced without AutoGraph (unconverted_steps):
a tensor used as a Python bool anywhere under a step fails when the step is
traced, where AutoGraph would have rewritten it into a graph branch."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.modeling import encoder_config
from official_electra.modeling.models import electra_classifier
from official_electra.modeling.networks import electra_encoder
from tests.modeling import test_span_heads
from tests.modeling import tiny


def _pretrainer():
  model = tiny.pretrainer("electra")
  return model, tiny.batch(), None


def _classifier():
  model = electra_classifier.ElectraClassifier(
      encoder_config.build_encoder(tiny.TINY), num_outputs=2)
  model.compile(loss=tf_keras.losses.SparseCategoricalCrossentropy(
      from_logits=True))
  return model, tiny.batch(), np.array([0, 1] * 4)


def _span_labeler():
  features, labels = test_span_heads.squad_batch()
  return test_span_heads.span_labeler("joint"), features, labels


_MODELS = {"pretrainer": _pretrainer, "classifier": _classifier,
           "span_labeler": _span_labeler}


def _run_step(model, step, features, labels):
  if not model.optimizer:
    model.compile(optimizer=tf_keras.optimizers.Adam(1e-3))
  if step == "train_step":
    model.fit(features, labels, batch_size=8, epochs=1, verbose=0)
  elif step == "test_step":
    model.evaluate(features, labels, batch_size=8, verbose=0)
  else:
    model.predict(features, batch_size=8, verbose=0)


@pytest.fixture
def a_python_bool_in_the_encoder(monkeypatch):
  call = electra_encoder.ElectraEncoder.call

  def call_with_a_python_bool(self, inputs, training=None):
    outputs = call(self, inputs, training=training)
    if tf.reduce_sum(outputs["sequence_output"]) > 0.0:
      outputs = dict(outputs)
    return outputs

  monkeypatch.setattr(electra_encoder.ElectraEncoder, "call",
                      call_with_a_python_bool)


@pytest.mark.parametrize("step", ["train_step", "test_step", "predict_step"])
@pytest.mark.parametrize("name", sorted(_MODELS))
def test_a_python_bool_on_a_tensor_fails_in_every_step(
    a_python_bool_in_the_encoder, name, step):
  model, features, labels = _MODELS[name]()
  # The patched encoder does work where AutoGraph runs (so the failure below
  # is the steps' missing conversion, not a broken patch).
  tf.function(lambda inputs: model(inputs, training=False))(features)
  with pytest.raises(tf.errors.OperatorNotAllowedInGraphError,
                     match="as a Python `bool` is not allowed"):
    _run_step(model, step, features, labels)
