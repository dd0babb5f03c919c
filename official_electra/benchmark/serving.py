r"""Serving speed of the exported SavedModels against Hugging Face, one run.

    python -m official_electra.benchmark.serving [--model=small|base|tiny]
        [--batch_sizes=1,32,128] [--repetitions=5] [--latency_calls=20]
        [--seq_len=128] [--glue_dir=../shared/data/glue]
        [--vocab_file=../shared/data/vocab/bert_base_uncased_vocab.txt]
        [--models=classifier,discriminator] [--inputs=single,pair]
        [--signatures=text,token_ids] [--output=serving.json]

Exports a classifier (SST-2's for single sentences, MRPC's for pairs) and the
discriminator of one random-weight checkpoint with the project's own export
code, and writes the same weights as a Hugging Face directory with our
converter (see `serving_models`). A fresh worker process loads the exports
with TensorFlow and TF Text alone (`tf.saved_model.load`, signature calls, as
TF Serving loads them); beside it, a second one runs transformers' fast
tokenizer and `ElectraForSequenceClassification` (our head's weights in
place of its head; see `serving_workers`) or `ElectraForPreTraining`
(PyTorch CPU) on the same weights. Hugging Face runs twice for the raw-text
cases: padded to `seq_len`, as our text signatures pack (the same tensors),
and padded to each request's longest sequence, as users commonly call it.
Token ids are packed by our tokenizer, to `seq_len`, for both.

Each round sends every case the same requests (GLUE dev rows in order,
continuing from round to round; generated text of GLUE-like lengths without
the GLUE files or the vocabulary) to each implementation in turn: at
batch 1, `latency_calls` requests per round (latency: median and p99 of all
of them); at larger batches one request per round (throughput: examples/s
of the median request). A request is timed from Python inputs to numpy
outputs. Before the rounds each worker serves each case and batch once, and
the probabilities of both on the same 8 examples are compared (`max |diff|`).
"""

import math
import os
import pathlib
import statistics
import tempfile

from absl import app
from absl import flags
from absl import logging

from official_electra import errors
from official_electra.benchmark import serving_models
from official_electra.benchmark import serving_workers
from official_electra.benchmark import shapes
from official_electra.benchmark import workers

_SHARED_DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"
_SHARED_GLUE = _SHARED_DATA / "glue"
_SHARED_VOCAB = _SHARED_DATA / "vocab" / "bert_base_uncased_vocab.txt"


class ServingBenchmarkError(errors.UserError):
  """A flag names data that is not there; says the fix."""


def define_flags():
  """Defines the flags; only when run as a program, so that importing this
  module beside another benchmark (in tests) defines no flag twice."""
  flags.DEFINE_enum("model", "small", list(shapes.MODELS),
                    "Model shapes (tiny: gin/tiny.gin's, a smoke test).")
  flags.DEFINE_list("batch_sizes", ["1", "32", "128"], "Examples per request.")
  flags.DEFINE_integer("repetitions", 5, "Timed rounds.")
  flags.DEFINE_integer("latency_calls", 20, "Batch-1 requests per round.")
  flags.DEFINE_integer("seq_len", 128, "Length the text signatures pack to.")
  flags.DEFINE_string("glue_dir", None,
                      "GLUE folder whose SST-2 and MRPC dev text to serve "
                      "(default: ../shared/data/glue when there); empty: "
                      "generated text.")
  flags.DEFINE_string("vocab_file", None,
                      "WordPiece vocabulary (default: ../shared's BERT "
                      "vocabulary when there); empty: a generated one, and "
                      "generated text.")
  flags.DEFINE_multi_enum("models", ["classifier", "discriminator"],
                          ["classifier", "discriminator"], "Exports to serve.")
  flags.DEFINE_multi_enum("inputs", ["single", "pair"], ["single", "pair"],
                          "Single sentences and/or pairs.")
  flags.DEFINE_multi_enum("signatures", ["text", "token_ids"],
                          ["text", "token_ids"], "Signatures to call.")
  flags.DEFINE_bool("huggingface", True, "Run Hugging Face beside ours (when "
                    "torch and transformers are installed).")
  flags.DEFINE_string("output", None, "Write the results as JSON here too.")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


FLAGS = flags.FLAGS

_CHECKED_EXAMPLES = 8
# (TF signature, text inputs, output) of each (model, inputs, signature).
_SIGNATURES = {
    ("classifier", "single", "text"): ("serving_default", ("sentence",)),
    ("classifier", "pair", "text"): ("serving_default",
                                     ("sentence1", "sentence2")),
    ("classifier", "single", "token_ids"): ("serve_token_ids", None),
    ("classifier", "pair", "token_ids"): ("serve_token_ids", None),
    ("discriminator", "single", "text"): ("serve_text", ("sentence",)),
    ("discriminator", "pair", "text"): ("serve_text_pair",
                                        ("sentence1", "sentence2")),
    ("discriminator", "single", "token_ids"): ("serving_default", None),
    ("discriminator", "pair", "token_ids"): ("serving_default", None),
}
_OUTPUTS = {"classifier": "probabilities",
            "discriminator": "replaced_probability"}
# Implementations of a case: (name, Hugging Face padding or None for ours).
_HF_TEXT = (("huggingface", "max_length"), ("huggingface_longest", "longest"))
_HF_IDS = (("huggingface", None),)


def _cases(models, inputs_kinds, signatures):
  """`{case name: case}`; a case's `group` names the export it calls."""
  cases = {}
  for model in models:
    for inputs in inputs_kinds:
      for signature in signatures:
        tf_signature, text_keys = _SIGNATURES[(model, inputs, signature)]
        cases[f"{model} {inputs} {signature}"] = {
            "group": f"classifier_{inputs}" if model == "classifier" else model,
            "model": model, "inputs": inputs, "signature": tf_signature,
            "text_keys": text_keys, "output": _OUTPUTS[model]}
  return cases


def _percentile(values, fraction):
  """Nearest-rank percentile."""
  ordered = sorted(values)
  return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def _max_difference(ours, theirs, per_token):
  """Largest |difference| of two `(probabilities, input_mask)` outputs; per
  token (the discriminator) at the positions real in `theirs`, ours cut to
  its length (theirs may be padded to the longest example only)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  (our_values, _), (their_values, their_mask) = ours, theirs
  if per_token:
    real = their_mask.astype(bool)
    our_values = our_values[:, :their_values.shape[1]][real]
    their_values = their_values[real]
  return float(np.max(np.abs(our_values - their_values)))


def _requests(round_index, batch_size, calls, num_examples):
  """The rows of each request of one round, continuing through the data."""
  first = round_index * calls * batch_size
  return [[(first + call * batch_size + i) % num_examples
           for i in range(batch_size)] for call in range(calls)]


def _start_workers(cases, exports, settings, data, implementations):
  """`{implementation: Worker}`, started one after the other."""
  groups = {case["group"] for case in cases.values()}
  paths = dict({"discriminator": exports.discriminator},
               **{f"classifier_{inputs}": path
                  for inputs, path in exports.classifiers.items()})
  running = {"ours": workers.Worker(
      "ours", serving_workers.build_saved_model_server,
      dict(data, cases=cases, exports={group: paths[group]
                                       for group in groups}))}
  if "huggingface" in implementations:
    heads = dict({"discriminator": None},
                 **{f"classifier_{inputs}": head
                    for inputs, head in exports.classifier_heads.items()})
    running["huggingface"] = workers.Worker(
        "huggingface", serving_workers.build_huggingface_server,
        dict(data, cases=cases, hf_dir=exports.hf_dir,
             heads={group: heads[group] for group in groups},
             vocab_file=settings["vocab_file"], seq_len=settings["seq_len"]))
  return running


def _serve(cases, running, settings, data):
  """Checks, warms up and times every case; returns `{case: results}`."""
  variants = {case_name: [("ours", "ours", None)] + [
      (label, "huggingface", padding)
      for label, padding in (_HF_TEXT if case["text_keys"] else _HF_IDS)
      if "huggingface" in running] for case_name, case in cases.items()}
  batch_sizes = settings["batch_sizes"]
  results = {}
  for case_name, case in cases.items():
    num_examples = len(data["texts"][case["inputs"]])
    rows = list(range(_CHECKED_EXAMPLES))
    outputs = {label: running[worker].call(
        {"op": "outputs", "case": case_name, "variant": padding,
         "rows": rows}) for label, worker, padding in variants[case_name]}
    results[case_name] = {label: {
        "max_abs_difference_to_ours": _max_difference(
            outputs["ours"], outputs[label], case["model"] == "discriminator"),
        "seconds": {size: [] for size in batch_sizes}}
                          for label, _, _ in variants[case_name]}
    for size in batch_sizes:  # Warm-up: one request of each size.
      for label, worker, padding in variants[case_name]:
        running[worker].call({"op": "time", "case": case_name,
                              "variant": padding,
                              "rows": _requests(0, size, 1, num_examples)})
  print("checked and warmed up", flush=True)
  for round_index in range(settings["repetitions"]):
    for case_name, case in cases.items():
      num_examples = len(data["texts"][case["inputs"]])
      for size in batch_sizes:
        calls = settings["latency_calls"] if size == 1 else 1
        requests = _requests(round_index, size, calls, num_examples)
        for label, worker, padding in variants[case_name]:
          results[case_name][label]["seconds"][size].extend(
              running[worker].call({"op": "time", "case": case_name,
                                    "variant": padding, "rows": requests}))
    print(f"round {round_index + 1}/{settings['repetitions']} done",
          flush=True)
  for case_results in results.values():
    for entry in case_results.values():
      entry["batches"] = {
          str(size): {"latency_ms_median": 1e3 * statistics.median(seconds),
                      "latency_ms_p99": 1e3 * _percentile(seconds, 0.99),
                      "examples_per_second": size / statistics.median(seconds),
                      "requests": len(seconds)}
          for size, seconds in entry.pop("seconds").items()}
  return results


def _default(flag_value, shared_path):
  """A flag's path: its value, or `shared_path` when unset and there."""
  if flag_value is None:
    return str(shared_path) if shared_path.exists() else ""
  return flag_value


def _data_source(vocab_file, glue_dir, work_dir):
  """`(vocab_file, texts, description)`; see the flags."""
  vocab_file = _default(vocab_file, _SHARED_VOCAB)
  glue_dir = _default(glue_dir, _SHARED_GLUE)
  if vocab_file and not os.path.isfile(vocab_file):
    raise ServingBenchmarkError(f"--vocab_file={vocab_file}: no such file; "
                                "pass a WordPiece vocab.txt, or an empty "
                                "value for a generated one")
  texts = None
  if glue_dir:
    texts = serving_models.read_glue_texts(glue_dir)
    if texts is None:
      raise ServingBenchmarkError(
          f"--glue_dir={glue_dir}: no SST-2/dev.tsv and MRPC/dev.tsv there; "
          "pass the GLUE folder, or an empty value for generated text")
  if not vocab_file:
    vocab_file = serving_models.write_generated_vocabulary(
        os.path.join(work_dir, "vocab.txt"))
    texts = None  # GLUE's words are not in a generated vocabulary.
  if texts is None:
    return (vocab_file, serving_models.generate_texts(vocab_file),
            "generated, GLUE-like lengths")
  return vocab_file, texts, "GLUE dev: SST-2 sentences, MRPC pairs"


def run(settings):
  """Makes the exports, serves every case; returns a JSON-able dict."""
  cases = _cases(settings["models"], settings["inputs"],
                 settings["signatures"])
  groups = {case["group"] for case in cases.values()}
  implementations = ["ours"]
  if settings["huggingface"] and shapes.huggingface_installed():
    implementations.append("huggingface")
  elif settings["huggingface"]:
    print("huggingface: skipped (torch/transformers not installed)")
  with tempfile.TemporaryDirectory(prefix="electra_serving_") as work_dir:
    vocab_file, texts, text_source = _data_source(
        settings["vocab_file"], settings["glue_dir"], work_dir)
    reported_settings = dict(settings, vocab_file=(
        "generated" if vocab_file.startswith(work_dir) else vocab_file))
    settings = dict(settings, vocab_file=vocab_file)
    exports = serving_models.make_exports(
        work_dir, settings["model"], vocab_file, settings["seq_len"],
        discriminator="discriminator" in groups,
        classifier_inputs=[inputs for inputs in settings["inputs"]
                           if f"classifier_{inputs}" in groups])
    data = {"texts": texts,
            "token_ids": serving_models.pack_token_ids(vocab_file, texts,
                                                       settings["seq_len"])}
    print("exported", flush=True)
    running = _start_workers(cases, exports, settings, data, implementations)
    results = _serve(cases, running, settings, data)
    worker_info = {}
    for name, worker in running.items():
      worker_info[name] = dict(worker.ready, **worker.call({"op": "info"}))
      worker_info[name]["peak_memory_mib"] = worker.stop()
  return {"settings": reported_settings, "cpu": workers.cpu_description(),
          "text_source": text_source,
          "examples": {inputs: len(rows) for inputs, rows in texts.items()},
          "workers": worker_info, "cases": results}


def format_table(results):
  """The results as a plain-text table (the JSON has the same figures)."""
  settings = results["settings"]
  sizes = [str(size) for size in settings["batch_sizes"]]
  header = f"{'case':<32}{'implementation':<21}"
  for size in sizes:
    header += (f"{'b1 p50 ms':>10}{'b1 p99 ms':>10}" if size == "1"
               else f"{f'b{size} ex/s':>11}")
  lines = [
      f"serving: model={settings['model']} seq_len={settings['seq_len']}, "
      f"text {results['text_source']} ({results['examples']['single']} "
      f"single, {results['examples']['pair']} pairs); "
      f"{settings['repetitions']} rounds, {settings['latency_calls']} batch-1 "
      "requests per round",
      workers.cpu_line(results["cpu"]),
      header + f"{'max |diff|':>12}",
  ]
  for case_name, entries in results["cases"].items():
    for index, (label, entry) in enumerate(entries.items()):
      line = f"{case_name if index == 0 else '':<32}{label:<21}"
      for size in sizes:
        batch = entry["batches"][size]
        line += (f"{batch['latency_ms_median']:>10.1f}"
                 f"{batch['latency_ms_p99']:>10.1f}" if size == "1"
                 else f"{batch['examples_per_second']:>11.1f}")
      difference = entry["max_abs_difference_to_ours"]
      lines.append(line + (f"{difference:>12.1e}" if label != "ours" else ""))
  return "\n".join(lines)


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)  # The exports' INFO lines.
  settings = {
      "model": FLAGS.model,
      "batch_sizes": [int(size) for size in FLAGS.batch_sizes],
      "repetitions": FLAGS.repetitions, "latency_calls": FLAGS.latency_calls,
      "seq_len": FLAGS.seq_len, "glue_dir": FLAGS.glue_dir,
      "vocab_file": FLAGS.vocab_file, "models": FLAGS.models,
      "inputs": FLAGS.inputs, "signatures": FLAGS.signatures,
      "huggingface": FLAGS.huggingface,
  }
  try:
    results = run(settings)
  except errors.UserError as error:
    # Imported here: a spawned worker imports this module, and should hold
    # nothing of the project's past the benchmark package.
    from official_electra import command_line  # pylint: disable=g-import-not-at-top
    command_line.exit_with_error(error, FLAGS.verbose)
  print(format_table(results))
  if FLAGS.output:
    workers.write_results(FLAGS.output, results)


if __name__ == "__main__":
  define_flags()
  app.run(main)
