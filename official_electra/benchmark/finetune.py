r"""Fine-tuning step speed: ours against Hugging Face, one run.

    python -m official_electra.benchmark.finetune [--model=small|base|tiny]
        [--batch_size=32] [--seq_len=128] [--repetitions=5] [--steps=3]
        [--warmup_steps=2] [--output=finetune.json]

Each implementation trains in its own worker process; after a warm-up the
coordinator runs them in turn, alternating, `repetitions` timed rounds of
`steps` training steps each. Both train a sentence-pair classifier (2 labels)
on the same GLUE-like batch (`batch_size` x `seq_len` tokens, every position
real) with the fine-tuning recipe (paper Appendix A):
  ours         `official_electra.finetuning.glue_family`: `build_classifier` and
               the compile `official_electra.finetune` uses (the original
               AdamW with eps 1e-6, weight decay 0.01 but not on LayerNorm or
               biases, layer-wise learning-rate decay 0.8, warm-up and linear
               decay), one `ElectraClassifier.train_step` per step (global-norm
               clipping at 1.0), as `fit` runs it; dropout from checkpointed
               generators, as `official_electra.finetune` draws it;
  huggingface  transformers' `ElectraForSequenceClassification` (PyTorch
               CPU) with `torch.optim.AdamW` over parameter groups giving the
               same learning-rate multipliers and weight-decay exclusions, a
               `LambdaLR` warm-up and linear decay, `clip_grad_norm_(1.0)`.
Where the two differ (see docs/benchmarks.md): `torch.optim.AdamW` corrects
the moments' bias, the original AdamW does not (same work per step); and
Hugging Face's head adds a hidden x hidden dense layer and GELU at `[CLS]`
before the output layer (ours, as the original, is dropout and one dense
layer), a negligible share of the step (0.005% of its FLOPs at Small).
Training FLOPs are 3x the encoder's forward matmuls
(`official_electra.training.flops`, its matmul count).
"""

import os
import statistics

from absl import app
from absl import flags

from official_electra import errors
from official_electra.benchmark import shapes
from official_electra.benchmark import workers


def define_flags():
  """Defines the flags; only when run as a program, so that importing this
  module beside another benchmark (in tests) defines no flag twice."""
  flags.DEFINE_enum("model", "small", list(shapes.MODELS),
                    "Model shapes (tiny: gin/tiny.gin's, a smoke test).")
  flags.DEFINE_integer("batch_size", 32, "Examples per step.")
  flags.DEFINE_integer("seq_len", 128, "Tokens per example.")
  flags.DEFINE_integer("repetitions", 5, "Timed rounds per implementation.")
  flags.DEFINE_integer("steps", 3, "Training steps per timed round.")
  flags.DEFINE_integer("warmup_steps", 2, "Untimed steps before the rounds.")
  flags.DEFINE_list("implementations", ["ours", "huggingface"],
                    "Which implementations to run.")
  flags.DEFINE_string("output", None, "Write the results as JSON here too.")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


FLAGS = flags.FLAGS

TASK = "MRPC"  # A sentence-pair task with two labels.
NUM_TRAIN_STEPS = 1000  # Sets the schedule's shape only; its cost is the same.


def _config(model):
  return shapes.discriminator_config(model)


def _batch(batch_size, seq_len, vocab_size):
  """`(input_word_ids, input_type_ids, labels)`: `[CLS] A [SEP] B [SEP]`."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from official_electra.conversion import electra_parts  # pylint: disable=g-import-not-at-top
  special = electra_parts.BERT_SPECIAL_TOKEN_IDS
  rng = np.random.default_rng(0)
  ids = rng.integers(1000, vocab_size, size=(batch_size, seq_len)).astype(
      np.int32)
  middle = seq_len // 2
  ids[:, 0] = special["[CLS]"]
  ids[:, middle] = special["[SEP]"]
  ids[:, -1] = special["[SEP]"]
  type_ids = np.zeros_like(ids)
  type_ids[:, middle + 1:] = 1
  labels = rng.integers(0, 2, size=batch_size).astype(np.int32)
  return ids, type_ids, labels


def _hyperparameters(settings):
  from official_electra.finetuning import trainer  # pylint: disable=g-import-not-at-top
  # The paper's recipe (mean loss, the paper's layer-wise rule): what the
  # Hugging Face side trains with.
  return trainer.FinetuneHyperparameters(batch_size=settings["batch_size"],
                                         max_seq_length=settings["seq_len"],
                                         recipe="paper")


def build_ours(settings):
  """`step()` of our fine-tuning: one `ElectraClassifier.train_step`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  from official_electra.finetuning import glue_family  # pylint: disable=g-import-not-at-top
  from official_electra.finetuning import tasks  # pylint: disable=g-import-not-at-top

  # As trainer.finetune_seed: dropout from checkpointed tf.random.Generators.
  tf_keras.utils.set_random_seed(0)
  tf_keras.backend.experimental.enable_tf_random_generator()
  config = _config(settings["model"])
  task = tasks.get_task(TASK)
  hyperparameters = _hyperparameters(settings)
  classifier = glue_family.build_classifier(config, task, hyperparameters)
  # The compile official_electra.finetune uses (optimizer, schedule, layer-wise
  # decay, loss): the one place that recipe is written.
  glue_family.compile_classifier(classifier, task, hyperparameters, NUM_TRAIN_STEPS)
  ids, type_ids, labels = _batch(settings["batch_size"], settings["seq_len"],
                                 config.vocab_size)
  features = {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
              "input_type_ids": type_ids}
  iterator = iter(tf.data.Dataset.from_tensors((features, labels)).repeat())
  train_function = classifier.make_train_function()
  return _stepper(lambda: float(train_function(iterator)["loss"]), settings)


def _layer_depth(name, num_layers):
  """Depth from the top as `layerwise_decay` counts it, by HF parameter name."""
  if name.startswith(("electra.embeddings.", "electra.embeddings_project.")):
    return num_layers + 1
  prefix = "electra.encoder.layer."
  if name.startswith(prefix):
    return num_layers - int(name[len(prefix):].split(".")[0])
  return 0  # The classification head.


def hf_parameter_groups(model, hyperparameters, num_layers):
  """`torch.optim.AdamW` groups: our layer-wise rates and decay exclusions."""
  from official_electra.optimization import adamw  # pylint: disable=g-import-not-at-top
  groups = {}
  for name, parameter in model.named_parameters():
    depth = _layer_depth(name, num_layers)
    decays = not any(pattern in name for pattern in
                     adamw.DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY)
    group = groups.setdefault((depth, decays), {
        "params": [],
        "lr": (hyperparameters.learning_rate *
               hyperparameters.layerwise_decay_rate**depth),
        "weight_decay": hyperparameters.weight_decay_rate if decays else 0.0})
    group["params"].append(parameter)
  return list(groups.values())


def build_huggingface(settings):
  """`step()` of Hugging Face's `ElectraForSequenceClassification`."""
  workers.prepare_torch_environment()
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top

  torch.manual_seed(0)
  torch.set_num_threads(os.cpu_count())
  config = _config(settings["model"])
  hyperparameters = _hyperparameters(settings)
  model = transformers.ElectraForSequenceClassification(
      transformers.ElectraConfig(
          vocab_size=config.vocab_size, embedding_size=config.embedding_size,
          hidden_size=config.hidden_size, num_hidden_layers=config.num_layers,
          num_attention_heads=config.num_attention_heads,
          intermediate_size=config.intermediate_size,
          hidden_dropout_prob=config.dropout_rate,
          attention_probs_dropout_prob=config.attention_dropout_rate,
          classifier_dropout=hyperparameters.dropout_rate, num_labels=2))
  model.train()
  optimizer = torch.optim.AdamW(
      hf_parameter_groups(model, hyperparameters, config.num_layers), eps=1e-6)
  warmup_steps = int(hyperparameters.warmup_proportion * NUM_TRAIN_STEPS)
  schedule = torch.optim.lr_scheduler.LambdaLR(
      optimizer, lambda step: min((step + 1) / warmup_steps,
                                  max(0.0, 1 - step / NUM_TRAIN_STEPS)))
  ids, type_ids, labels = (torch.from_numpy(array).long() for array in _batch(
      settings["batch_size"], settings["seq_len"], config.vocab_size))
  mask = torch.ones_like(ids)

  def step():
    logits = model(input_ids=ids, attention_mask=mask,
                   token_type_ids=type_ids).logits
    loss = torch.nn.functional.cross_entropy(logits, labels)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(),
                                   hyperparameters.gradient_clip_norm)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss.detach())

  return _stepper(step, settings)


def _stepper(step, settings):
  """Warms `step` up; the handler runs `steps` steps and times them."""
  import time  # pylint: disable=g-import-not-at-top
  for _ in range(settings["warmup_steps"]):
    step()

  def run_steps(steps):
    start = time.perf_counter()
    for _ in range(steps):
      loss = step()
    return time.perf_counter() - start, loss

  return run_steps


BUILDERS = {"ours": build_ours, "huggingface": build_huggingface}


def check_implementations(implementations):
  """Raises `errors.UserError` for a name not in `BUILDERS`."""
  for kind in implementations:
    if kind not in BUILDERS:
      raise errors.UserError(
          f"--implementations: unknown implementation {kind!r}; pass "
          f"{' and/or '.join(BUILDERS)}")


def run(settings, implementations):
  """Runs the alternating benchmark; returns a JSON-able dict of results."""
  from official_electra.training import flops  # pylint: disable=g-import-not-at-top
  config = _config(settings["model"])
  # Forward matmuls of the encoder, x3 for forward and backward (the matmul
  # count, set against measured rates).
  flops_per_example = 3 * settings["seq_len"] * (
      flops.matmul_tower_flops_per_token(config, settings["seq_len"]))
  running = {}
  for kind in implementations:
    if kind == "huggingface" and not shapes.huggingface_installed():
      print(f"{kind}: skipped (torch/transformers not installed)")
      continue
    # Built and warmed up one at a time, so their compilation does not overlap.
    running[kind] = workers.Worker(kind, BUILDERS[kind], settings)
    print(f"{kind}: warmed up", flush=True)
  seconds = {kind: [] for kind in running}
  losses = {}
  for repetition in range(settings["repetitions"]):
    for kind, worker in running.items():
      elapsed, losses[kind] = worker.call(settings["steps"])
      seconds[kind].append(elapsed)
    print(f"round {repetition + 1}/{settings['repetitions']} done", flush=True)
  results = {"settings": settings, "cpu": workers.cpu_description(),
             "flops_per_example": flops_per_example, "implementations": {}}
  for kind, worker in running.items():
    rates = [settings["steps"] * settings["batch_size"] / s
             for s in seconds[kind]]
    median = statistics.median(rates)
    results["implementations"][kind] = {
        "examples_per_second": median,
        "examples_per_second_min": min(rates),
        "examples_per_second_max": max(rates),
        "tokens_per_second": median * settings["seq_len"],
        "training_flops_per_second": median * flops_per_example,
        "last_loss": losses[kind],
        "peak_memory_mib": worker.stop(),
    }
  reference = results["implementations"].get("huggingface")
  for entry in results["implementations"].values():
    entry["ratio_to_huggingface"] = (
        entry["examples_per_second"] / reference["examples_per_second"]
        if reference else None)
  return results


def format_table(results):
  """The results as a plain-text table (the JSON has the same figures)."""
  settings = results["settings"]
  lines = [
      f"fine-tuning step: model={settings['model']} "
      f"batch={settings['batch_size']} seq_len={settings['seq_len']} float32, "
      f"{settings['repetitions']} rounds of {settings['steps']} step(s)",
      workers.cpu_line(results["cpu"]),
      f"training FLOPs/example {results['flops_per_example'] / 1e9:.2f} G",
      f"{'implementation':<14}{'examples/s':>12}{'(min-max)':>16}"
      f"{'tokens/s':>10}{'GFLOP/s':>9}{'vs HF':>7}{'peak MiB':>10}",
  ]
  for kind, entry in results["implementations"].items():
    ratio = entry["ratio_to_huggingface"]
    lines.append(
        f"{kind:<14}{entry['examples_per_second']:>12.2f}"
        f"{entry['examples_per_second_min']:>8.2f}-"
        f"{entry['examples_per_second_max']:<7.2f}"
        f"{entry['tokens_per_second']:>10.0f}"
        f"{entry['training_flops_per_second'] / 1e9:>9.0f}"
        f"{(f'{ratio:.2f}x' if ratio else '-'):>7}"
        f"{entry['peak_memory_mib']:>10.0f}")
  return "\n".join(lines)


def main(argv):
  del argv
  settings = {
      "model": FLAGS.model, "batch_size": FLAGS.batch_size,
      "seq_len": FLAGS.seq_len, "repetitions": FLAGS.repetitions,
      "steps": FLAGS.steps, "warmup_steps": FLAGS.warmup_steps,
  }
  try:
    check_implementations(FLAGS.implementations)
  except errors.UserError as error:
    # Imported here: a spawned worker imports this module, and should hold
    # no more than its implementation needs.
    from official_electra import command_line  # pylint: disable=g-import-not-at-top
    command_line.exit_with_error(error, FLAGS.verbose)
  results = run(settings, FLAGS.implementations)
  print(format_table(results))
  if FLAGS.output:
    workers.write_results(FLAGS.output, results)


if __name__ == "__main__":
  define_flags()
  app.run(main)
