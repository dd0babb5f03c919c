r"""Peak memory and step time of gradient accumulation, one run.

    python -m official_electra.benchmark.accumulation_memory [--model=small]
        [--batch_size=128] [--seq_len=128] [--accumulation_steps=4]
        [--steps=3] [--output=accumulation.json]

Three configurations of our pretraining step, each in its own fresh worker
process (so each peak is its own): the micro-batch alone
(`batch_size / accumulation_steps`, no accumulation), the whole batch in
`accumulation_steps` accumulated micro-batches, and the whole batch in one
pass. Each runs `steps` training steps of `ElectraPretrainer.train_step` on
synthetic tokens (ELECTRA's shapes: `benchmark.shapes`); reported are the
process's peak resident memory (CPU; on a GPU also the device's peak) and
the time per optimizer step. Accumulation is meant to cost the memory of the
micro-batch (plus a copy of the gradients), not that of the whole batch.
"""

import time

from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra.benchmark import shapes
from official_electra.benchmark import workers

flags.DEFINE_enum("model", "small", shapes.MODELS, "Model shapes.")
flags.DEFINE_integer("batch_size", 128, "Examples per optimizer step.")
flags.DEFINE_integer("seq_len", 128, "Tokens per example.")
flags.DEFINE_integer("accumulation_steps", 4, "Micro-batches per step.")
flags.DEFINE_integer("steps", 3, "Timed optimizer steps (after one warm-up).")
flags.DEFINE_string("output", None, "Write the results as JSON here too.")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")
FLAGS = flags.FLAGS

_MASK_ID, _CLS_ID, _SEP_ID, _PAD_ID = 103, 101, 102, 0


def _build(settings):
  """A handler running `steps` optimizer steps; returns seconds per step."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  from official_electra.modeling import model_config  # pylint: disable=g-import-not-at-top
  from official_electra.modeling import objectives  # pylint: disable=g-import-not-at-top
  from official_electra.modeling.models import electra_model  # pylint: disable=g-import-not-at-top
  from official_electra.modeling.layers import dynamic_masking  # pylint: disable=g-import-not-at-top
  from official_electra.modeling.models import electra_pretrainer  # pylint: disable=g-import-not-at-top
  from official_electra.optimization import optimizer_factory  # pylint: disable=g-import-not-at-top

  tf_keras.utils.set_random_seed(0)
  tf_keras.backend.experimental.enable_tf_random_generator()
  discriminator = shapes.discriminator_config(settings["model"])
  generator = discriminator.scaled(shapes.generator_fraction(settings["model"]))
  model = electra_pretrainer.ElectraPretrainer(
      electra_model.ElectraModel.from_config(model_config.ModelConfig(
          discriminator=discriminator, generator=generator,
          heads=objectives.get("electra").heads(True))),
      mask_token_id=_MASK_ID, excluded_token_ids=[_CLS_ID, _SEP_ID, _PAD_ID],
      max_predictions_per_seq=dynamic_masking.max_predictions_per_seq(
          settings["seq_len"], 0.15),
      seed=0, gradient_accumulation_steps=settings["accumulation_steps"])
  model.compile(optimizer=optimizer_factory.create_optimizer(
      "adamw", 5e-4, 10**6, 10**4))
  # Built before training, as official_electra.train builds it.
  build_ids = tf.zeros([1, settings["seq_len"]], tf.int32)
  model({"input_word_ids": build_ids, "input_mask": tf.ones_like(build_ids),
         "input_type_ids": build_ids}, training=False)
  ids = np.random.default_rng(0).integers(
      1000, discriminator.vocab_size,
      size=(settings["batch_size"], settings["seq_len"])).astype(np.int32)
  ids[:, 0], ids[:, -1] = _CLS_ID, _SEP_ID
  ids = tf.constant(ids)
  inputs = {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
            "input_type_ids": tf.zeros_like(ids)}
  iterator = iter(tf.data.Dataset.from_tensors(inputs).repeat())
  train_function = model.make_train_function()
  float(train_function(iterator)["loss"])  # Warm-up (traces the step).

  def run(steps):
    start = time.perf_counter()
    for _ in range(steps):
      loss = float(train_function(iterator)["loss"])
    return {"seconds_per_step": (time.perf_counter() - start) / steps,
            "last_loss": loss}
  return run


def _gpu_peak_mib():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.config.list_physical_devices("GPU"):
    return None
  return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20


def _build_with_gpu_peak(settings):
  run = _build(settings)

  def handler(payload):
    if payload == "gpu_peak":
      return _gpu_peak_mib()
    return run(payload)
  return handler


def run_benchmark(model, batch_size, seq_len, accumulation_steps, steps):
  """Measures the three configurations; returns the results dict."""
  if batch_size % accumulation_steps:
    raise errors.UserError(f"--batch_size={batch_size} does not split into "
                           f"--accumulation_steps={accumulation_steps} micro-"
                           "batches: use a multiple of it")
  micro = batch_size // accumulation_steps
  configurations = {
      "micro_batch_alone": (micro, 1),
      "accumulated": (batch_size, accumulation_steps),
      "whole_batch": (batch_size, 1),
  }
  results = {"model": model, "batch_size": batch_size, "seq_len": seq_len,
             "accumulation_steps": accumulation_steps,
             "cpu": workers.cpu_description(), "configurations": {}}
  for name, (examples, k) in configurations.items():
    worker = workers.Worker(name, _build_with_gpu_peak, {
        "model": model, "batch_size": examples, "seq_len": seq_len,
        "accumulation_steps": k})
    timing = worker.call(steps)
    gpu_peak = worker.call("gpu_peak")
    peak = worker.stop()
    results["configurations"][name] = {
        "examples_per_pass": examples // k, "examples_per_step": examples,
        "accumulation_steps": k, "peak_memory_mib": peak,
        "gpu_peak_memory_mib": gpu_peak, **timing}
  return results


def format_table(results):
  lines = [workers.cpu_line(results["cpu"]),
           f"{results['model']}, batch {results['batch_size']} x "
           f"{results['seq_len']} tokens, {results['accumulation_steps']} "
           "micro-batches", "",
           "| configuration | examples per pass | per step | peak MiB | "
           "s per step |", "|---|---|---|---|---|"]
  for name, entry in results["configurations"].items():
    gpu = (f" (GPU {entry['gpu_peak_memory_mib']:.0f})"
           if entry["gpu_peak_memory_mib"] is not None else "")
    lines.append(f"| {name} | {entry['examples_per_pass']} | "
                 f"{entry['examples_per_step']} | "
                 f"{entry['peak_memory_mib']:.0f}{gpu} | "
                 f"{entry['seconds_per_step']:.3f} |")
  return "\n".join(lines)


def main(argv):
  del argv
  try:
    results = run_benchmark(FLAGS.model, FLAGS.batch_size, FLAGS.seq_len,
                            FLAGS.accumulation_steps, FLAGS.steps)
  except errors.UserError as error:
    command_line.exit_with_error(error, FLAGS.verbose)
  print(format_table(results))
  if FLAGS.output:
    workers.write_results(FLAGS.output, results)


if __name__ == "__main__":
  app.run(main)
