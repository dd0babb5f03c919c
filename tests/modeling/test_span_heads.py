"""The span heads and ElectraSpanLabeler against the original's definitions.

The reference is `finetune/qa/qa_tasks.py` (ELECTRA_REFERENCE_SQUAD.md section
2): masks of -1000 outside the context, the final [SEP] and [CLS]; the end
conditioned on the gold start in training and on a beam of starts at
prediction; the loss (CE(start) + CE(end)) / 2 + 0.5 * sigmoid-CE.

    python -m tests.modeling.test_span_heads

prints, as JSON, the "mean" loss of a batch split over two logical CPU
replicas (configured before TensorFlow starts); one test reads it.
"""

import json

import numpy as np
import pytest
import scipy.special
import tensorflow as tf
import tf_keras

from official_electra.modeling import encoder_config
from official_electra.modeling.layers import span_heads
from official_electra.modeling.models import electra_span_labeler
from tests import module_run
from tests.modeling import tiny

CLS, SEP, PAD = tiny.CLS_ID, tiny.SEP_ID, tiny.PAD_ID
HEADS = {
    "joint": span_heads.SpanHeadConfig(beam_size=4, hidden_size=8),
    "joint_no_classifier": span_heads.SpanHeadConfig(
        beam_size=4, hidden_size=8, answerable_classifier=False),
    "joint_cls_only": span_heads.SpanHeadConfig(
        beam_size=4, hidden_size=8, answerable_uses_start_logits=False),
    "independent": span_heads.SpanHeadConfig(joint_prediction=False,
                                             hidden_size=8),
    "independent_no_classifier": span_heads.SpanHeadConfig(
        joint_prediction=False, answerable_classifier=False),
}


def squad_batch(doc_lengths=(8, 6, 5), question_length=3, seq_len=16, seed=0):
  """`[CLS] question [SEP] context [SEP] [PAD]...` rows, and labels.

  Context tokens and the final [SEP] have type id 1. Row r's answer is the
  context's tokens 1..2, except the last row: impossible (labelled [CLS]).
  """
  rng = np.random.default_rng(seed)
  batch = len(doc_lengths)
  ids = np.full((batch, seq_len), PAD, np.int32)
  types = np.zeros((batch, seq_len), np.int32)
  doc_start = question_length + 2
  for row, doc_length in enumerate(doc_lengths):
    ids[row, 0] = CLS
    ids[row, 1:doc_start - 1] = rng.integers(5, tiny.TINY.vocab_size,
                                             question_length)
    ids[row, doc_start - 1] = SEP
    ids[row, doc_start:doc_start + doc_length] = rng.integers(
        5, tiny.TINY.vocab_size, doc_length)
    ids[row, doc_start + doc_length] = SEP
    types[row, doc_start:doc_start + doc_length + 1] = 1
  features = {"input_word_ids": ids,
              "input_mask": (ids != PAD).astype(np.int32),
              "input_type_ids": types}
  impossible = np.arange(batch) == batch - 1
  labels = {
      "start_positions": np.where(impossible, 0,
                                  doc_start + 1).astype(np.int32),
      "end_positions": np.where(impossible, 0,
                                doc_start + 2).astype(np.int32),
      "is_impossible": impossible.astype(np.float32)}
  return features, labels


def span_labeler(head="joint", loss_reduction="sum", seed=0, **kwargs):
  tf_keras.utils.set_random_seed(seed)
  return electra_span_labeler.ElectraSpanLabeler(
      encoder_config.build_encoder(tiny.TINY), HEADS[head],
      loss_reduction=loss_reduction, **kwargs)


def training_inputs(features, labels):
  return dict(features, start_positions=labels["start_positions"])


def numpy_mask(features):
  mask = features["input_mask"] * features["input_type_ids"]
  mask[:, 0] = 1
  return mask


def gelu(x):
  return 0.5 * x * (1.0 + scipy.special.erf(x / np.sqrt(2.0)))


def log_softmax(x):
  return x - scipy.special.logsumexp(x, axis=-1, keepdims=True)


@pytest.mark.parametrize("head", sorted(HEADS))
def test_output_shapes_and_dtypes(head):
  features, labels = squad_batch()
  model = span_labeler(head)
  config = HEADS[head]
  # predict: numpy arrays, batches concatenated (model calls elsewhere).
  predicted = (model.predict(features, batch_size=2, verbose=0)
               if head in ("joint", "independent") else
               {key: value.numpy() for key, value in model(features).items()})
  beam = config.beam_size
  if config.joint_prediction:
    expected = {"start_top_log_probs": ((3, beam), np.float32),
                "start_top_index": ((3, beam), np.int32),
                "end_top_log_probs": ((3, beam, beam), np.float32),
                "end_top_index": ((3, beam, beam), np.int32)}
  else:
    expected = {"start_logits": ((3, 16), np.float32),
                "end_logits": ((3, 16), np.float32)}
  if config.answerable_classifier:
    expected["answerable_logit"] = ((3,), np.float32)
  assert {key: (value.shape, value.dtype) for key, value in
          predicted.items()} == expected
  trained = model(training_inputs(features, labels), training=True)
  assert {key: tuple(value.shape) for key, value in trained.items()} == {
      "start_logits": (3, 16), "end_logits": (3, 16),
      **({"answerable_logit": (3,)} if config.answerable_classifier else {})}


@pytest.mark.parametrize("head", ["joint", "independent"])
def test_question_and_padding_get_minus_1000(head):
  features, labels = squad_batch()
  model = span_labeler(head)
  outputs = model(training_inputs(features, labels), training=True)
  sequence = model.encoder(features)["sequence_output"]
  raw_start = tf.squeeze(model.span_head.start_dense(sequence), -1).numpy()
  offset = outputs["start_logits"].numpy() - raw_start
  mask = numpy_mask(features)
  # Row 0: [CLS] q q q [SEP] eight context tokens [SEP] [PAD] [PAD].
  np.testing.assert_array_equal(mask[0], [1, 0, 0, 0, 0] + [1] * 9 + [0, 0])
  np.testing.assert_allclose(offset[mask == 1], 0.0, atol=1e-4)
  np.testing.assert_allclose(offset[mask == 0], -1000.0, atol=1e-3)
  end_logits = outputs["end_logits"].numpy()
  for row in range(3):
    masked, kept = end_logits[row, mask[row] == 0], end_logits[row,
                                                                mask[row] == 1]
    assert masked.max() < kept.min() - 900


def test_training_end_logits_depend_on_the_gold_start():
  features, labels = squad_batch()
  moved = dict(labels, start_positions=labels["start_positions"] + 2)
  for head, depends in (("joint", True), ("independent", False)):
    model = span_labeler(head)
    before = model(training_inputs(features, labels), training=True)
    after = model(training_inputs(features, moved), training=True)
    np.testing.assert_array_equal(before["start_logits"],
                                  after["start_logits"])
    changed = np.abs(before["end_logits"] - after["end_logits"]).max()
    assert (changed > 1e-3) == depends, head


def _joint_head_case(seed=0):
  head = span_heads.JointSpanHead(beam_size=3, answerable_classifier=False,
                                  hidden_size=5)
  rng = np.random.default_rng(seed)
  sequence = rng.normal(size=(2, 7, 4)).astype(np.float32)
  mask = np.array([[1, 0, 0, 1, 1, 1, 1], [1, 0, 1, 1, 1, 0, 0]], np.float32)
  head.build(sequence.shape)
  # Biases at random too, so that a bias left out shows.
  for variable in head.variables:
    variable.assign(rng.normal(size=variable.shape) * 0.5)
  return head, sequence, mask, head(tf.constant(sequence), tf.constant(mask))


def test_prediction_beams_match_a_hand_computation():
  head, sequence, mask, outputs = _joint_head_case()
  start_kernel, start_bias = (head.start_dense.kernel.numpy(),
                              head.start_dense.bias.numpy())
  hidden_kernel, hidden_bias = (head.end_hidden.kernel.numpy(),
                                head.end_hidden.bias.numpy())
  end_kernel, end_bias = (head.end_dense.kernel.numpy(),
                          head.end_dense.bias.numpy())
  offset = -1000.0 * (1.0 - mask)
  start_log_probs = log_softmax((sequence @ start_kernel)[..., 0] +
                                start_bias + offset)
  for row in range(2):
    starts = np.argsort(-start_log_probs[row], kind="stable")[:3]
    np.testing.assert_array_equal(outputs["start_top_index"][row], starts)
    np.testing.assert_allclose(outputs["start_top_log_probs"][row],
                               start_log_probs[row, starts], atol=1e-5)
    for beam, start in enumerate(starts):
      concatenated = np.concatenate(
          [np.tile(sequence[row, start], (7, 1)), sequence[row]], axis=-1)
      end_logits = (gelu(concatenated @ hidden_kernel + hidden_bias) @
                    end_kernel)[:, 0] + end_bias + offset[row]
      end_log_probs = log_softmax(end_logits)
      ends = np.argsort(-end_log_probs, kind="stable")[:3]
      np.testing.assert_array_equal(outputs["end_top_index"][row, beam], ends)
      np.testing.assert_allclose(outputs["end_top_log_probs"][row, beam],
                                 end_log_probs[ends], atol=1e-5)


def test_beams_are_in_decreasing_order_of_log_probability():
  _, _, _, outputs = _joint_head_case(seed=1)
  for key in ("start_top_log_probs", "end_top_log_probs"):
    values = outputs[key].numpy()
    assert np.all(np.diff(values, axis=-1) <= 0), key
  # Row 1 has four unmasked positions; the beam of three takes three of them.
  assert set(outputs["start_top_index"][1].numpy()) <= {0, 2, 3, 4}


def test_a_sequence_shorter_than_the_beam_pads_past_its_end():
  head = span_heads.JointSpanHead(beam_size=6, hidden_size=4)
  sequence = tf.random.stateless_normal([2, 4, 8], seed=[1, 2])
  outputs = head(sequence, tf.ones([2, 4]))
  assert outputs["start_top_index"].shape == (2, 6)
  assert outputs["end_top_index"].shape == (2, 6, 6)
  for key in ("start_top", "end_top"):
    index = outputs[f"{key}_index"].numpy()
    log_probs = outputs[f"{key}_log_probs"].numpy()
    assert np.all((index >= 4) == (log_probs < -9000)), key
    assert np.all(np.sort(index[..., :4], axis=-1) == np.arange(4)), key


def _numpy_loss(outputs, labels, answerable_weight):
  outputs = {key: value.numpy() for key, value in outputs.items()}
  rows = np.arange(len(labels["start_positions"]))
  start = -log_softmax(outputs["start_logits"])[rows, labels["start_positions"]]
  end = -log_softmax(outputs["end_logits"])[rows, labels["end_positions"]]
  losses = (start + end) / 2.0
  if "answerable_logit" in outputs:
    logit, target = outputs["answerable_logit"], labels["is_impossible"]
    # Sigmoid cross-entropy, written out: -t log s(x) - (1 - t) log(1 - s(x)).
    losses += answerable_weight * -(
        target * np.log(scipy.special.expit(logit)) +
        (1.0 - target) * np.log(scipy.special.expit(-logit)))
  return losses


@pytest.mark.parametrize("head", ["joint", "independent_no_classifier"])
@pytest.mark.parametrize("loss_reduction", ["sum", "mean"])
def test_loss_is_the_originals_formula(head, loss_reduction):
  features, labels = squad_batch()
  model = span_labeler(head, loss_reduction=loss_reduction)
  outputs = model(training_inputs(features, labels), training=True)
  losses = _numpy_loss(outputs, labels, answerable_weight=0.5)
  expected = losses.sum() if loss_reduction == "sum" else losses.mean()
  np.testing.assert_allclose(
      electra_span_labeler.span_losses(outputs, labels, 0.5), losses,
      rtol=1e-5)
  np.testing.assert_allclose(model.compute_loss(y=labels, y_pred=outputs),
                             expected, rtol=1e-5)
  # evaluate: the same loss (no dropout in the tiny encoder), logged "loss".
  model.compile(optimizer=tf_keras.optimizers.SGD(0.0))
  evaluated = model.evaluate(features, labels, batch_size=3, verbose=0,
                             return_dict=True)
  assert evaluated["loss"] == pytest.approx(expected, rel=1e-5)


def test_answerable_weight_scales_the_sigmoid_term():
  features, labels = squad_batch()
  model = span_labeler("joint")
  outputs = model(training_inputs(features, labels), training=True)
  with_classifier = electra_span_labeler.span_losses(outputs, labels, 0.5)
  without = electra_span_labeler.span_losses(
      {key: value for key, value in outputs.items()
       if key != "answerable_logit"}, labels, 0.5)
  sigmoid_loss = tf.nn.sigmoid_cross_entropy_with_logits(
      labels=labels["is_impossible"], logits=outputs["answerable_logit"])
  np.testing.assert_allclose(with_classifier - without, 0.5 * sigmoid_loss,
                             rtol=1e-5, atol=1e-6)
  assert HEADS["joint"].answerable_weight == 0.5


def test_fit_logs_the_loss_and_lowers_it():
  features, labels = squad_batch(doc_lengths=(8, 8, 8, 8))
  labels["is_impossible"][:] = 0
  labels["start_positions"][:] = 6
  labels["end_positions"][:] = 7
  model = span_labeler("joint")
  model.compile(optimizer=tf_keras.optimizers.Adam(3e-3))
  history = model.fit(features, labels, batch_size=4, epochs=15, verbose=0)
  assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
  # The loss metric is not a model variable (checkpoints hold weights only).
  assert not any("loss" in variable.name for variable in model.variables)


def test_train_step_clips_the_global_gradient_norm():
  features, labels = squad_batch()
  model = span_labeler("independent", gradient_clip_norm=1e-3)
  # Only dense gradients: embedding gradients are IndexedSlices whose repeated
  # rows make the applied change differ from the clipped norm of their values.
  model.encoder.trainable = False
  model.compile(optimizer=tf_keras.optimizers.SGD(1.0))
  model(features)
  before = [variable.numpy() for variable in model.trainable_variables]
  model.fit(features, labels, batch_size=3, epochs=1, verbose=0)
  change = np.sqrt(sum(
      np.sum((variable.numpy() - old) ** 2)
      for variable, old in zip(model.trainable_variables, before)))
  assert change == pytest.approx(1e-3, rel=1e-3)


@pytest.mark.parametrize("head", ["joint", "independent"])
def test_a_batch_trimmed_to_its_longest_sequence_gives_the_same_outputs(head):
  features, _ = squad_batch(seq_len=24)
  longest = int(features["input_mask"].sum(axis=1).max())
  trimmed = {key: value[:, :longest] for key, value in features.items()}
  model = span_labeler(head)
  full = model(features, training=False)
  short = model(trimmed, training=False)
  assert set(full) == set(short)
  real = features["input_mask"][:, :longest] == 1
  for key in full:
    full_value, short_value = full[key].numpy(), short[key].numpy()
    if key in ("start_logits", "end_logits"):
      full_value, short_value = full_value[:, :longest][real], short_value[real]
    np.testing.assert_allclose(short_value, full_value, rtol=1e-5, atol=1e-4,
                               err_msg=key)


@pytest.mark.parametrize("head", ["joint", "independent"])
def test_get_config_round_trip(head):
  features, _ = squad_batch()
  model = span_labeler(head)
  model(features)
  rebuilt = electra_span_labeler.ElectraSpanLabeler.from_config(
      model.get_config())
  rebuilt(features)
  assert rebuilt.get_config() == model.get_config()
  assert rebuilt.head_config == HEADS[head]
  rebuilt.set_weights(model.get_weights())
  for key, value in model(features).items():
    np.testing.assert_allclose(rebuilt(features)[key], value, rtol=1e-5,
                               atol=1e-5)
  layer = model.span_head
  copy = type(layer).from_config(layer.get_config())
  assert copy.get_config() == layer.get_config()


def test_savedmodel_round_trip_and_tf_function(tmp_path):
  features, _ = squad_batch()
  model = span_labeler("joint")
  expected = model(features, training=False)
  call = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
  for key, value in call(features).items():
    np.testing.assert_allclose(value, expected[key], rtol=1e-5, atol=1e-5)
  tf.saved_model.save(model, str(tmp_path / "span_labeler"))
  reloaded = tf.saved_model.load(str(tmp_path / "span_labeler"))
  for key, value in reloaded(features, training=False).items():
    np.testing.assert_allclose(value, expected[key], rtol=1e-5, atol=1e-5)


def test_mixed_precision_outputs_are_float32():
  features, labels = squad_batch()
  tf_keras.mixed_precision.set_global_policy("mixed_float16")
  try:
    model = span_labeler("joint")
    predicted = model(features, training=False)
    trained = model(training_inputs(features, labels), training=True)
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")
  for key in ("start_top_log_probs", "end_top_log_probs", "answerable_logit"):
    assert predicted[key].dtype == tf.float32, key
  assert trained["end_logits"].dtype == tf.float32


def test_bad_settings_are_refused():
  with pytest.raises(ValueError, match="beam_size"):
    span_heads.SpanHeadConfig(beam_size=0)
  with pytest.raises(ValueError, match="unknown span head settings beam"):
    span_heads.SpanHeadConfig.from_dict({"beam": 5})
  with pytest.raises(ValueError, match="loss_reduction"):
    span_labeler("joint", loss_reduction="average")
  assert span_heads.SpanHeadConfig.from_dict(
      HEADS["joint"].to_dict()) == HEADS["joint"]


def test_mean_divides_by_the_global_batch_over_two_replicas():
  measured = module_run.last_json_line("tests.modeling.test_span_heads")
  # Each replica's loss is its sum over the global batch of 4, not over its 2.
  assert measured["replica_losses_sum"] == pytest.approx(
      measured["one_device_mean"], rel=1e-5)


def _two_replica_mean_loss():
  """Replica losses of a 4-window batch on two logical CPUs, beside the mean
  one device computes (of the same random logits)."""
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
  _, labels = squad_batch(doc_lengths=(8, 6, 5, 7))
  outputs = {key: tf.random.stateless_normal(shape, seed=[index, 0])
             for index, (key, shape) in enumerate(
                 (("start_logits", [4, 16]), ("end_logits", [4, 16]),
                  ("answerable_logit", [4])))}
  model = span_labeler("joint", loss_reduction="mean")
  one_device = float(model.compute_loss(y=labels, y_pred=outputs))
  strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
  dataset = tf.data.Dataset.from_tensor_slices((outputs, labels)).batch(4)
  batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
  losses = strategy.experimental_local_results(strategy.run(
      lambda replica_outputs, replica_labels: model.compute_loss(
          y=replica_labels, y_pred=replica_outputs), args=batch))
  return {"replica_losses_sum": float(sum(losses)),
          "one_device_mean": one_device}


if __name__ == "__main__":
  print(json.dumps(_two_replica_mean_loss()))
