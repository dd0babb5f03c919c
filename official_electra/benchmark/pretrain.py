r"""Pretraining-step speed: ours against Model Garden and Hugging Face, one run.

    python -m official_electra.benchmark.pretrain [--model=small|base|tiny]
        [--batch_size=32] [--seq_len=128] [--mixed_precision=float32]
        [--jit_compile] [--repetitions=5] [--steps=3] [--output=bench.json]
        [--implementations=ours,model_garden,huggingface]
        [--reference=model_garden]

An implementation written `kind:precision` runs in that precision instead of
--mixed_precision's, so `--mixed_precision=mixed_bfloat16
--implementations=ours,model_garden,model_garden:float32
--reference=model_garden:float32` compares our bfloat16 step with Model
Garden's float32 one (the choice a user faces) in one run; the peak and the
step's matmul ceiling are timed in each precision used.

Each implementation lives in its own worker process (so each one's peak memory
is its own) and the coordinator runs them in turn, alternating, after a
warm-up: `repetitions` timed rounds of `steps` training steps each. All three
train the same shapes (ELECTRA-Small: 12 layers, hidden 256, embeddings 128,
generator 1/4; Base: generator 1/3), the same loss (MLM + 50 x RTD over
masked-position samples), global-norm clipping at 1.0 and, for the two
TensorFlow ones, the same optimizer (the original AdamW):
  ours          official_electra's ElectraPretrainer.train_step (dynamic
                masking in the step);
  model_garden  official.nlp.modeling.models.ElectraPretrainer over BertEncoder
                towers, with masks precomputed (as its input pipeline does);
                under a mixed policy its sampler gets float32 logits (see
                `pretrain_steps.patch_model_garden_sampler`), without which
                it cannot run;
  huggingface   transformers' ElectraForMaskedLM + ElectraForPreTraining
                (PyTorch, shared embeddings, sampling at masked positions,
                torch.optim.AdamW), when torch and transformers are installed.
MFU is achieved training FLOP/s (analytic, matmuls only) over the peak of a
large matmul measured in the same run and precision. Training FLOPs are the
matmul count of `official_electra.training.flops` (not the paper's count,
which adds the dense embedding lookups and the elementwise ops that no matmul
rate measures). The step's own matmuls, each timed alone (`matmul_ceiling`),
run below that peak; their rate is reported too, and each implementation's
achieved rate as a fraction of it ("of matmuls"): 100% would be a step with
no cost besides its matmuls.
The ten shapes with the largest share of that matmul time are listed under the
table (all of them in the JSON's `step_matmuls`), to show where it goes.
"""

import multiprocessing
import os
import resource
import statistics
import time

from absl import app
from absl import flags

from official_electra import errors
from official_electra.benchmark import matmul_ceiling
from official_electra.benchmark import pretrain_steps
from official_electra.benchmark import workers as benchmark_workers


def define_flags():
  """Defines the flags; only when run as a program, so that importing this
  module beside another program (in tests) defines no flag twice."""
  flags.DEFINE_enum("model", "small", ["small", "base", "tiny"],
                    "Model shapes (tiny: gin/tiny.gin's, a smoke test).")
  flags.DEFINE_integer("batch_size", 32, "Examples per step.")
  flags.DEFINE_integer("seq_len", 128, "Tokens per example.")
  flags.DEFINE_enum("mixed_precision", "float32",
                    ["float32", "mixed_bfloat16", "mixed_float16"],
                    "Precision.")
  flags.DEFINE_bool("jit_compile", False, "XLA-compile the TensorFlow steps.")
  flags.DEFINE_integer("repetitions", 5, "Timed rounds per implementation.")
  flags.DEFINE_integer("steps", 3, "Training steps per timed round.")
  flags.DEFINE_integer("warmup_steps", 3, "Untimed steps before the rounds.")
  flags.DEFINE_list("implementations", ["ours", "model_garden", "huggingface"],
                    "Which implementations to run; `kind:precision` runs one "
                    "in its own precision (e.g. model_garden:float32 beside "
                    "--mixed_precision=mixed_bfloat16).")
  flags.DEFINE_string("reference", "model_garden",
                      "The implementation the `vs` column divides by, as "
                      "written in --implementations.")
  flags.DEFINE_string("output", None, "Write the results as JSON here too.")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


FLAGS = flags.FLAGS

def _worker(kind, settings, connection):
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  try:
    if kind == "huggingface":
      step = pretrain_steps.build_huggingface(settings)
    else:
      _share_the_gpus()
      step = pretrain_steps.build_tensorflow(kind, settings)
    for _ in range(settings["warmup_steps"]):
      step()
    connection.send(("ready", None))
    while True:
      command, steps = connection.recv()
      if command == "stop":
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        gpu_mib = None if kind == "huggingface" else _gpu_peak_memory_mib()
        connection.send(("peak_memory_mib", (peak_kib / 1024, gpu_mib)))
        return
      start = time.perf_counter()
      for _ in range(steps):
        loss = step()
      connection.send(("seconds", (time.perf_counter() - start, loss)))
  except Exception as error:  # pylint: disable=broad-except
    connection.send(("error", f"{type(error).__name__}: {error}"))


def _on_gpu():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return bool(tf.config.list_physical_devices("GPU"))


def _share_the_gpus():
  """Lets the workers and the coordinator share a GPU (TensorFlow would
  otherwise reserve all of its memory for the first process); before any op."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for gpu in tf.config.list_physical_devices("GPU"):
    tf.config.experimental.set_memory_growth(gpu, True)


def _gpu_peak_memory_mib():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not _on_gpu():
    return None
  return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20


def matmul_peak_flops(mixed_precision, size=4096, repeats=5):
  """Best FLOP/s of a `size`^3 matmul in the compute dtype of `mixed_precision`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  dtype = matmul_ceiling.compute_dtype(mixed_precision)
  left = tf.cast(tf.random.normal([size, size]), dtype)
  right = tf.cast(tf.random.normal([size, size]), dtype)
  matmul = tf.function(lambda a, b: tf.reduce_sum(tf.matmul(a, b)))
  calls = 20 if _on_gpu() else 1
  return 2 * size**3 / matmul_ceiling.best_seconds(matmul, (left, right),
                                                   repeats, calls)


def available(kind):
  if kind != "huggingface":
    return True
  try:
    import torch  # pylint: disable=g-import-not-at-top,unused-import
    import transformers  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    return False
  return True


def parse_implementation(spec, default_precision):
  """`kind` or `kind:precision` -> (kind, precision).

  Raises:
    errors.UserError: an unknown kind or precision (a `ValueError`).
  """
  kind, _, precision = spec.partition(":")
  precision = precision or default_precision
  if kind not in ("ours", "model_garden", "huggingface"):
    raise errors.UserError(
        f"--implementations: unknown implementation {kind!r}; pass ours, "
        "model_garden or huggingface")
  if precision not in ("float32", "mixed_bfloat16", "mixed_float16"):
    raise errors.UserError(
        f"--implementations: unknown precision {precision!r} in {spec!r}; "
        "pass float32, mixed_bfloat16 or mixed_float16")
  return kind, precision


def run(settings, implementations, reference="model_garden"):
  """Runs the alternating benchmark; returns a JSON-able dict of results.

  `implementations` are `kind` or `kind:precision` (see the flag); each is
  reported under that name, its MFU and "of matmuls" over the peak and the
  step's matmuls timed in its own precision, and its ratio over `reference`'s
  examples/s.
  """
  from official_electra.training import flops  # pylint: disable=g-import-not-at-top
  discriminator_config, generator_config = pretrain_steps.configs(settings["model"])
  flops_per_example = flops.pretraining_flops(
      discriminator_config, generator_config, "electra", settings["seq_len"],
      pretrain_steps.masked_slots(settings["seq_len"]),
      count=flops.MATMUL).train_per_example
  specs = {spec: parse_implementation(spec, settings["mixed_precision"])
           for spec in implementations}
  context = multiprocessing.get_context("spawn")
  workers = {}
  for spec, (kind, precision) in specs.items():
    if not available(kind):
      print(f"{spec}: skipped (torch/transformers not installed)")
      continue
    parent, child = context.Pipe()
    # Daemon workers end with the coordinator, also when it fails.
    process = context.Process(
        target=_worker,
        args=(kind, dict(settings, mixed_precision=precision), child),
        daemon=True)
    process.start()
    # Build and warm up one at a time, so compilation does not overlap.
    status, detail = parent.recv()
    if status != "ready":
      # Reported and left out, so the others are still compared.
      print(f"{spec}: failed to start, left out: {detail.splitlines()[0]}",
            flush=True)
      process.join()
      continue
    workers[spec] = (process, parent)
    print(f"{spec}: warmed up", flush=True)
  _share_the_gpus()
  precisions = sorted({settings["mixed_precision"]}
                      | {precision for _, precision in specs.values()})
  peaks = {precision: [matmul_peak_flops(precision)]
           for precision in precisions}
  seconds = {spec: [] for spec in workers}
  for repetition in range(settings["repetitions"]):
    for kind, (_, connection) in workers.items():
      connection.send(("run", settings["steps"]))
      status, detail = connection.recv()
      if status != "seconds":
        raise RuntimeError(f"{kind} failed: {detail}")
      seconds[kind].append(detail[0])
    print(f"round {repetition + 1}/{settings['repetitions']} done", flush=True)
  by_precision = {}
  for precision in precisions:
    peaks[precision].append(matmul_peak_flops(precision))
    # On a GPU most of the step's matmuls take microseconds, less than a
    # call's launch: timed alone they would measure the launches, so no
    # ceiling there.
    timings = None if _on_gpu() else matmul_ceiling.step_matmul_timings(
        discriminator_config, generator_config, settings["batch_size"],
        settings["seq_len"], pretrain_steps.masked_slots(settings["seq_len"]), precision)
    by_precision[precision] = {
        "matmul_peak_flops": max(peaks[precision]),
        "step_matmul_flops": (matmul_ceiling.flops_per_second(timings)
                              if timings else None),
        "step_matmuls": timings}
  main_precision = by_precision[settings["mixed_precision"]]
  results = {"settings": settings, "flops_per_example": flops_per_example,
             "matmul_peak_flops": main_precision["matmul_peak_flops"],
             "step_matmul_flops": main_precision["step_matmul_flops"],
             "step_matmuls": main_precision["step_matmuls"],
             "precisions": {precision: {key: value for key, value in
                                        entry.items() if key != "step_matmuls"}
                            for precision, entry in by_precision.items()},
             "reference": reference, "implementations": {}}
  for spec, (process, connection) in workers.items():
    kind, precision = specs[spec]
    peak = by_precision[precision]["matmul_peak_flops"]
    ceiling = by_precision[precision]["step_matmul_flops"]
    connection.send(("stop", 0))
    _, (memory, gpu_memory) = connection.recv()
    process.join()
    rates = [settings["steps"] * settings["batch_size"] / s
             for s in seconds[spec]]
    median = statistics.median(rates)
    results["implementations"][spec] = {
        "implementation": kind, "mixed_precision": precision,
        "examples_per_second": median,
        "examples_per_second_min": min(rates),
        "examples_per_second_max": max(rates),
        "tokens_per_second": median * settings["seq_len"],
        "mfu": median * flops_per_example / peak,
        "fraction_of_step_matmuls": (median * flops_per_example / ceiling
                                     if ceiling else None),
        "peak_memory_mib": memory,
        "gpu_peak_memory_mib": gpu_memory,
    }
  base = results["implementations"].get(reference)
  for entry in results["implementations"].values():
    entry["ratio_to_reference"] = (
        entry["examples_per_second"] / base["examples_per_second"]
        if base else None)
  return results


def format_table(results):
  """The results as a plain-text table (the JSON has the same figures)."""
  settings = results["settings"]
  entries = results["implementations"]
  on_gpu = any(entry.get("gpu_peak_memory_mib") is not None
               for entry in entries.values())
  width = max([14] + [len(spec) + 2 for spec in entries])
  lines = [
      f"model={settings['model']} batch={settings['batch_size']} "
      f"seq_len={settings['seq_len']} precision={settings['mixed_precision']} "
      f"jit_compile={settings['jit_compile']}",
      f"training FLOPs/example {results['flops_per_example'] / 1e9:.2f} G",
  ]
  for precision, rates in results["precisions"].items():
    step_rate = rates["step_matmul_flops"]
    lines.append(
        f"{precision}: matmul peak {rates['matmul_peak_flops'] / 1e9:.0f} "
        "GFLOP/s; "
        + (f"the step's own matmuls alone {step_rate / 1e9:.0f} GFLOP/s"
           if step_rate else "the step's own matmuls: not timed on a GPU"))
  lines.append(f"vs: examples/s over {results['reference']}'s")
  lines.append(
      f"{'implementation':<{width}}{'examples/s':>12}{'(min-max)':>16}"
      f"{'tokens/s':>10}{'vs':>7}{'MFU':>7}{'of matmuls':>11}"
      f"{'peak MiB':>10}" + (f"{'GPU MiB':>10}" if on_gpu else ""))
  for kind, entry in entries.items():
    ratio = entry["ratio_to_reference"]
    fraction = entry["fraction_of_step_matmuls"]
    gpu_memory = entry.get("gpu_peak_memory_mib")
    gpu_cell = f"{gpu_memory:.0f}" if gpu_memory is not None else "-"
    lines.append(
        f"{kind:<{width}}{entry['examples_per_second']:>12.2f}"
        f"{entry['examples_per_second_min']:>8.2f}-"
        f"{entry['examples_per_second_max']:<7.2f}"
        f"{entry['tokens_per_second']:>10.0f}"
        f"{(f'{ratio:.2f}x' if ratio else '-'):>7}"
        f"{entry['mfu']:>7.0%}"
        f"{(f'{fraction:.0%}' if fraction is not None else '-'):>11}"
        f"{entry['peak_memory_mib']:>10.0f}"
        + (f"{gpu_cell:>10}" if on_gpu else ""))
  return "\n".join(lines + _matmul_lines(results["step_matmuls"]))


def _matmul_lines(timings, shown=10):
  """The slowest of the step's matmul shapes, each timed alone."""
  if not timings:
    return []
  total = matmul_ceiling.seconds_per_step(timings)
  lines = ["the step's matmuls, each timed alone, largest share of their "
           f"{total * 1e3:.0f} ms first:"]
  for t in timings[:shown]:
    seconds = matmul_ceiling.seconds_per_step([t])
    shape = (f"{t['batch']} x " if t["batch"] > 1 else "") + (
        f"[{t['m']},{t['k']}] x [{t['k']},{t['n']}]")
    lines.append(
        f"  {t['product']} {shape:<30} x{t['count']:<3}{seconds * 1e3:>8.1f} ms"
        f"{seconds / total:>5.0%}{t['flops'] / t['seconds'] / 1e9:>7.0f} "
        "GFLOP/s")
  rest = timings[shown:]
  if rest:
    seconds = matmul_ceiling.seconds_per_step(rest)
    lines.append(f"  {len(rest)} more shapes: {seconds * 1e3:.1f} ms "
                 f"({seconds / total:.0%})")
  return lines


def main(argv):
  del argv
  settings = {
      "model": FLAGS.model, "batch_size": FLAGS.batch_size,
      "seq_len": FLAGS.seq_len, "mixed_precision": FLAGS.mixed_precision,
      "jit_compile": FLAGS.jit_compile, "repetitions": FLAGS.repetitions,
      "steps": FLAGS.steps, "warmup_steps": FLAGS.warmup_steps,
  }
  try:
    for spec in FLAGS.implementations:
      parse_implementation(spec, FLAGS.mixed_precision)
    if FLAGS.reference not in FLAGS.implementations + ["model_garden"]:
      raise errors.UserError(
          f"--reference={FLAGS.reference} is not one of --implementations "
          f"({','.join(FLAGS.implementations)}); pass one of them")
  except errors.UserError as error:
    # Imported here: a spawned worker imports this module, and should hold
    # no more than its implementation needs.
    from official_electra import command_line  # pylint: disable=g-import-not-at-top
    command_line.exit_with_error(error, FLAGS.verbose)
  results = run(settings, FLAGS.implementations, FLAGS.reference)
  print(format_table(results))
  if FLAGS.output:
    benchmark_workers.write_results(FLAGS.output, results)


if __name__ == "__main__":
  define_flags()
  app.run(main)
