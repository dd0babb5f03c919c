"""The README's first job: data, pretraining and export on this machine alone.

    python -m official_electra.quickstart [--work_dir=runs/quickstart]

1. writes an English corpus from the docstrings of this Python installation
   (standard library and installed packages; nothing is downloaded),
2. learns a WordPiece vocabulary and writes TFRecords
   (`tfrecords_tools.build_vocab`, `tfrecords_tools.build_pretraining_dataset`),
3. pretrains `gin/tiny.gin` with `official_electra.train` (the loss is
   printed as it falls), sampling the generator at temperature 2 (the paper:
   1; see `--temperature`),
4. plots the run's curves (total loss, generator MLM accuracy, discriminator
   AUC against the step) into `<work_dir>/training_curves.png`,
5. exports the discriminator with `official_electra.export` and prints the
   TF Serving command.
Each step runs the project's own command line, printed first, so the same
commands can be reused on real data. Rerunning resumes: finished steps are
kept (delete --work_dir to start over). A SIGTERM is passed on to the running
step; after pretraining saves its checkpoint the quickstart exits with status
75, like the programs it runs (official_electra/command_line.py). About 5 minutes on 2 CPU cores.
"""

import os
import signal
import statistics
import subprocess
import sys
import time

from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra import preemption
from official_electra.experiments import training_curves
from tfrecords_tools import sample_corpus

flags.DEFINE_string("work_dir", os.path.join("runs", "quickstart"),
                    "Folder for the corpus, data, model and export.")
flags.DEFINE_integer("corpus_bytes", 1_500_000, "Size of the docstring corpus.")
flags.DEFINE_integer("vocab_size", 4000, "Largest vocabulary size.")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per example.")
flags.DEFINE_integer("train_steps", 2000, "Pretraining steps.")
flags.DEFINE_float("temperature", 2.0, "The generator's sampling temperature "
                   "(run_pretraining.temperature, the original code's "
                   "option). The paper samples at 1.0; at this model size a "
                   "discriminator then stays at the base rate for thousands "
                   "of steps (docs/experiments.md), so the quickstart samples "
                   "at 2.0, whose replacements it learns to find in minutes.")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors (here and in "
                  "each step).")

# The final discriminator metrics are the mean of this many log records.
_FINAL_RECORDS = 10
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class QuickstartError(errors.UserError, RuntimeError):
  """The work dir is unusable, or a step failed (its error is printed above)."""


def _run(title, module, *arguments):
  if flags.FLAGS.verbose:
    arguments += ("--verbose",)
  command = [sys.executable, "-m", module, *arguments]
  print(f"\n== {title}\n$ python -m {module} " + " ".join(arguments),
        flush=True)
  started = time.monotonic()
  # Each step quiets TensorFlow's own logs unless --verbose
  # (official_electra/_program_logs.py): no log level is forced here.
  child = subprocess.Popen(command, cwd=_REPO_ROOT)
  # A SIGTERM sent to the quickstart alone reaches the step that runs.
  previous = signal.signal(signal.SIGTERM,
                           lambda signum, frame: child.send_signal(signum))
  try:
    returncode = child.wait()
  finally:
    signal.signal(signal.SIGTERM, previous)
  # Pretraining exits 75 after its checkpoint; the data tools die by the
  # signal, and their rerun redoes only unfinished shards.
  if returncode in (command_line.PREEMPTED_EXIT_STATUS, -signal.SIGTERM):
    raise preemption.Preempted(f"{title} stopped on SIGTERM; finished work "
                               "is kept, rerun the same command to resume")
  if returncode:
    raise QuickstartError(f"{title} failed (exit code {returncode})")
  print(f"({time.monotonic() - started:.0f} s)", flush=True)


def _next_version_dir(parent):
  versions = [int(name) for name in os.listdir(parent) if name.isdigit()] if (
      os.path.isdir(parent)) else []
  return os.path.join(parent, str(max(versions, default=0) + 1))


def _run_summary(model_dir):
  """The losses' fall, and the discriminator's final metrics (mean of the
  last `_FINAL_RECORDS` log records: one record is a few batches)."""
  records = training_curves.read_metrics_log(model_dir)
  first, last = records[0], records[-1]
  final = {name: statistics.fmean(record[name] for record in
                                  records[-_FINAL_RECORDS:])
           for name in ("disc_auc", "disc_precision", "disc_recall")}
  return (f"loss {first['loss']:.2f} at step {first['step']} -> "
          f"{last['loss']:.2f} at step {last['step']} (generator MLM "
          f"{first['masked_lm_loss']:.2f} -> {last['masked_lm_loss']:.2f}, "
          f"discriminator {first['disc_loss']:.3f} -> {last['disc_loss']:.3f})"
          f"\ndiscriminator over the last {_FINAL_RECORDS} log records: AUC "
          f"{final['disc_auc']:.3f}, precision {final['disc_precision']:.3f}, "
          f"recall {final['disc_recall']:.3f}")


def run_quickstart(work_dir, corpus_bytes, vocab_size, max_seq_length,
                   train_steps, temperature=2.0):
  """Runs the five steps; returns the export folder.

  Raises:
    QuickstartError: the work dir is unusable, or a step failed.
    preemption.Preempted: a SIGTERM stopped a step after it saved its work.
  """
  started = time.monotonic()
  work_dir = os.path.abspath(work_dir)
  try:
    os.makedirs(work_dir, exist_ok=True)
  except OSError as error:
    raise QuickstartError(f"cannot create --work_dir={work_dir} "
                          f"({error.strerror}): pass a writable folder") from error
  corpus = os.path.join(work_dir, "corpus.txt")
  vocab_file = os.path.join(work_dir, "vocab.txt")
  data_dir = os.path.join(work_dir, "data")
  model_dir = os.path.join(work_dir, "model")
  if not os.path.isfile(corpus):
    print(f"== corpus: docstrings of this Python installation -> {corpus}")
    try:
      unfinished = corpus + files.TEMPORARY_SUFFIX
      written = sample_corpus.write_stdlib_corpus(unfinished, corpus_bytes)
      files.move(unfinished, corpus)
    except OSError as error:
      raise QuickstartError(f"cannot write {corpus} ({error.strerror}): free "
                            "space there or pass another --work_dir") from error
    print(f"({written:,} bytes)")
  if not os.path.isfile(vocab_file):
    _run("vocabulary", "tfrecords_tools.build_vocab", f"--input={corpus}",
         f"--output={vocab_file}", f"--vocab_size={vocab_size}")
  _run("TFRecords", "tfrecords_tools.build_pretraining_dataset",
       f"--input={corpus}", f"--vocab_file={vocab_file}",
       f"--output_dir={data_dir}", f"--max_seq_length={max_seq_length}",
       "--num_shards=2")
  with open(vocab_file, encoding="utf-8") as vocab:
    actual_vocab_size = sum(1 for _ in vocab)
  _run("pretraining (gin/tiny.gin)", "official_electra.train",
       "--gin_file=gin/tiny.gin", f"--train_data={data_dir}",
       f"--vocab_file={vocab_file}", f"--model_dir={model_dir}",
       f"--gin_bindings=encoder.vocab_size={actual_vocab_size}",
       f"--gin_bindings=run_pretraining.max_seq_length={max_seq_length}",
       f"--gin_bindings=run_pretraining.num_train_steps={train_steps}",
       f"--gin_bindings=run_pretraining.temperature={temperature}",
       "--noprogress_bar")
  print(_run_summary(model_dir), flush=True)
  curves = training_curves.write_training_curves(
      model_dir, os.path.join(work_dir, training_curves.FIGURE_FILE),
      f"quickstart: gin/tiny.gin, {train_steps} steps, temperature "
      f"{temperature:g}")
  print(f"training curves: {curves}", flush=True)
  export_dir = _next_version_dir(os.path.join(work_dir, "export"))
  _run("export for TF Serving", "official_electra.export",
       f"--model_dir={model_dir}", f"--export_dir={export_dir}")
  print(f"\ndone in {time.monotonic() - started:.0f} s. Serve it with:\n"
        f"  docker run -p 8501:8501 -v {os.path.dirname(export_dir)}:"
        "/models/electra -e MODEL_NAME=electra tensorflow/serving\n"
        "(see docs/serving.md for requests)", flush=True)
  return export_dir


def main(argv):
  del argv
  try:
    run_quickstart(flags.FLAGS.work_dir, flags.FLAGS.corpus_bytes,
                   flags.FLAGS.vocab_size, flags.FLAGS.max_seq_length,
                   flags.FLAGS.train_steps, flags.FLAGS.temperature)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)
  except preemption.Preempted as preempted:
    command_line.exit_preempted(preempted)


if __name__ == "__main__":
  app.run(main)
