r"""How the build spreads examples over shards, and the loss curves it gives.

  nice python -m official_electra.experiments.shard_mixing \
      --output_dir=runs/shard_mixing

Hardware: 2 shared CPU cores. Time: about 15 minutes of CPU (three builds,
three runs of 600 steps, the held-out evaluations); a rerun reuses what is
done.
Result (the first 1 MB of each of the four texts in ../shared/data/corpus:
25,560 examples of 64 tokens in 16 shards, 9,600 trained; seed 0, one run
each): a batch of 16 draws on 6.6 tenths of the corpus with
`rotated_round_robin`, 2.1 with `round_robin` and 5.9 with `contiguous`; the
held-out loss at steps 100 / 300 / 600 is 23.2 / 21.9 / 20.8, 27.9 / 23.9 /
21.5 and 23.6 / 22.1 / 21.3. (A rotation by example counts instead of corpus
bytes, nearly the same shards, gave 22.8 / 21.7 / 20.6: one seed separates
the original's layout from the others, the other two less surely.)

The same records, the same seed and model (gin/tiny.gin, sampling at
temperature 2 as the quickstart), and three ways to put the records into
`--num_shards` files:

- `rotated_round_robin`: what `tfrecords_tools.build_pretraining_dataset`
  writes: example i (in corpus order) in shard `i % num_shards`, shard k
  starting at the k-th `num_shards`-th of the corpus and wrapping around;
- `round_robin`: the original ELECTRA tool's shards: the same, each shard
  from the start of the corpus;
- `contiguous`: what this tool wrote before: shard k the k-th slice of the
  corpus, in order.

The last two are made here from the records of a one-shard build (the corpus
order).

The corpus is the first `--train_bytes_per_file` of each file of `--corpus`
(by default the four texts in ../shared/data/corpus, so four regions unlike
each other); the held-out set is the next `--heldout_bytes_per_file` of each.
Training reads the shards as every run does (`record_stream`: 8 files
interleaved side by side, windows of `shuffle_buffer_size` records permuted),
so with contiguous shards a batch draws only on the 8 slices being read, and
with the original's shards, which all start at the beginning of the corpus,
on one region of it at a time.

Written: `results.json`, `results.png` and a table on stdout: how many tenths
of the corpus the training stream draws on (per batch, and in all), the mean
training loss over each window of `--window_steps` steps, and the held-out
loss at every checkpoint.
"""

import dataclasses
import gzip
import json
import os
import subprocess
import sys

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf
import tf_keras

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra.data import dataset_info as dataset_info_lib
from official_electra.data import pretraining_dataloader
from official_electra.data import pretraining_files
from official_electra.experiments import training_curves
from official_electra.training import architecture as architecture_lib
from tfrecords_tools import build_pretraining_dataset
from tfrecords_tools import corpus_reader

LAYOUTS = ("rotated_round_robin", "round_robin", "contiguous")
_SEQ_LENGTH = 64  # gin/tiny.gin's.
_BATCH_SIZE = 16  # gin/tiny.gin's.
_SHUFFLE_BUFFER = 1000  # gin/tiny.gin's.
_TEMPERATURE = 2.0
_CHECKPOINT_STEPS = 100  # gin/tiny.gin's.
_REGIONS = 10

flags.DEFINE_string("output_dir", "runs/shard_mixing", "Folder (reruns reuse "
                    "what is in it).")
flags.DEFINE_string("corpus", "../shared/data/corpus/*.txt.gz", "Corpus files "
                    "(glob); a slice of each is used.")
flags.DEFINE_string("vocab_file",
                    "../shared/data/vocab/bert_base_uncased_vocab.txt",
                    "WordPiece vocabulary.")
flags.DEFINE_integer("train_bytes_per_file", 1_000_000, "Training text taken "
                     "from the start of each corpus file.")
flags.DEFINE_integer("heldout_bytes_per_file", 100_000, "Held-out text taken "
                     "from each file after its training text.")
flags.DEFINE_integer("num_shards", 16, "Shards of the training records (the "
                     "build's default).")
flags.DEFINE_integer("num_train_steps", 600, "Steps of each run.")
flags.DEFINE_integer("window_steps", 50, "Steps per mean of the training loss.")
flags.DEFINE_integer("seed", 0, "Seed of the runs (and of the packing).")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


def write_text_slices(corpus_pattern, text_dir, train_bytes, heldout_bytes):
  """Writes `train_<name>.txt` and `heldout_<name>.txt` for every corpus file:
  its first `train_bytes` and the `heldout_bytes` after, cut at line ends."""
  os.makedirs(text_dir, exist_ok=True)
  for path in corpus_reader.find_corpus_files(corpus_pattern):
    name = os.path.basename(path).split(".")[0]
    train_path = os.path.join(text_dir, f"train_{name}.txt")
    if os.path.exists(train_path):
      continue
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as stream:
      data = stream.read(train_bytes + heldout_bytes)
    cut = data.rfind(b"\n", 0, train_bytes) + 1
    end = data.rfind(b"\n") + 1
    for part_path, part in ((os.path.join(text_dir, f"heldout_{name}.txt"),
                             data[cut:end]), (train_path, data[:cut])):
      files.write_bytes(part_path, part)


def _shard_records(data_dir, info):
  return [[record.numpy() for record in
           tf.data.TFRecordDataset(os.path.join(data_dir, name))]
          for name in info.shard_files]


def layout_shards(records, num_shards, layout):
  """`records` (in corpus order) put into `num_shards` lists by `layout`
  (`round_robin` or `contiguous`)."""
  if layout == "round_robin":
    return [records[shard::num_shards] for shard in range(num_shards)]
  return [records[shard * len(records) // num_shards:
                  (shard + 1) * len(records) // num_shards]
          for shard in range(num_shards)]


def write_layout(records, source_dir, output_dir, layout):
  """`records` (in corpus order) laid out by `layout` in `output_dir`, in
  files named as the build in `source_dir`, with its dataset_info.json (for
  these files) and token counts."""
  if dataset_info_lib.read_dataset_info(output_dir) is not None:
    return
  os.makedirs(output_dir, exist_ok=True)
  info = dataset_info_lib.read_dataset_info(source_dir)
  sizes, checksums, counts = [], [], []
  for name, part in zip(info.shard_files, layout_shards(
      records, info.num_shards, layout)):
    path = os.path.join(output_dir, name)
    with tf.io.TFRecordWriter(path) as writer:
      for record in part:
        writer.write(record)
    sizes.append(os.path.getsize(path))
    checksums.append(dataset_info_lib.file_sha256(path))
    counts.append(len(part))
  tf.io.gfile.copy(
      os.path.join(source_dir, dataset_info_lib.TOKEN_COUNTS_FILENAME),
      os.path.join(output_dir, dataset_info_lib.TOKEN_COUNTS_FILENAME),
      overwrite=True)
  dataclasses.replace(info, shard_sizes=sizes, shard_sha256=checksums,
                      shard_examples=counts,
                      build_fingerprint="").write(output_dir)


def stream_regions(data_dir, region_of, num_records, seed):
  """`(mean distinct regions per batch, share of regions drawn on)` of the
  first `num_records` records of the training stream."""
  files = pretraining_files.resolve_files(data_dir)
  stream = pretraining_dataloader.record_stream(files, seed, _SHUFFLE_BUFFER)
  regions = [region_of[record.numpy()]
             for record in stream.take(num_records)]
  batches = np.reshape(regions[:len(regions) // _BATCH_SIZE * _BATCH_SIZE],
                       [-1, _BATCH_SIZE])
  per_batch = float(np.mean([len(set(batch)) for batch in batches]))
  return per_batch, len(set(regions)) / _REGIONS


def train(data_dir, vocab_file, vocab_size, model_dir, num_train_steps, seed):
  """Runs `official_electra.train` on gin/tiny.gin (resumes; nothing to do
  when finished)."""
  bindings = [f"encoder.vocab_size={vocab_size}",
              f"run_pretraining.num_train_steps={num_train_steps}",
              f"run_pretraining.temperature={_TEMPERATURE}",
              f"run_pretraining.seed={seed}",
              "run_pretraining.keep_checkpoint_max="
              f"{num_train_steps // _CHECKPOINT_STEPS + 1}"]
  subprocess.run(
      [sys.executable, "-m", "official_electra.train",
       "--gin_file=gin/tiny.gin",
       *[f"--gin_bindings={binding}" for binding in bindings],
       f"--train_data={data_dir}", f"--vocab_file={vocab_file}",
       f"--model_dir={model_dir}", "--strategy=one_device",
       "--noprogress_bar"], check=True)


def window_losses(model_dir, window_steps):
  """Mean training loss over each window of `window_steps` steps."""
  means = {}
  for record in training_curves.read_metrics_log(model_dir):
    window = (record["step"] - 1) // window_steps
    means.setdefault(window, []).append(record["loss"])
  return [float(np.mean(means[window])) for window in sorted(means)]


def heldout_losses(model_dir, heldout_dir, seed):
  """`{step: held-out metrics}` of every checkpoint in `model_dir` (kept in
  `model_dir/heldout.json`)."""
  cache = os.path.join(model_dir, "heldout.json")
  if os.path.exists(cache):
    with open(cache, encoding="utf-8") as cache_file:
      return json.load(cache_file)
  results = {}
  prefixes = tf.train.get_checkpoint_state(model_dir).all_model_checkpoint_paths
  for prefix in prefixes:
    tf_keras.utils.set_random_seed(seed)
    pretrainer = architecture_lib.build_pretrainer(
        architecture_lib.read_architecture(model_dir), seed,
        temperature=_TEMPERATURE)
    pretrainer.compile()
    ids = tf.zeros([1, _SEQ_LENGTH], tf.int32)
    pretrainer({"input_word_ids": ids, "input_mask": tf.ones_like(ids),
                "input_type_ids": ids}, training=False)
    tf.train.Checkpoint(model=pretrainer).restore(prefix).expect_partial()
    dataset = pretraining_dataloader.pretraining_dataset(
        heldout_dir, _BATCH_SIZE, _SEQ_LENGTH, repeat=False, shuffle=False)
    metrics = pretrainer.evaluate(dataset, verbose=0, return_dict=True)
    results[prefix.rsplit("-", 1)[1]] = {name: float(value)
                                         for name, value in metrics.items()}
  with open(cache, "w", encoding="utf-8") as cache_file:
    json.dump(results, cache_file)
  return results


def run_study(settings):
  """Builds the three layouts, trains on each, writes results.json and .png."""
  root = settings.output_dir
  text_dir = os.path.join(root, "text")
  write_text_slices(settings.corpus, text_dir, settings.train_bytes_per_file,
                    settings.heldout_bytes_per_file)
  data_dirs = {layout: os.path.join(root, f"data_{layout}")
               for layout in LAYOUTS}
  build = lambda text, output_dir, num_shards: (
      build_pretraining_dataset.build_pretraining_dataset(
          os.path.join(text_dir, text), settings.vocab_file, output_dir,
          max_seq_length=_SEQ_LENGTH, num_shards=num_shards, num_workers=0,
          seed=settings.seed))
  info = build("train_*.txt", data_dirs["rotated_round_robin"],
               settings.num_shards)
  corpus_dir = os.path.join(root, "data_corpus_order")
  order = _shard_records(corpus_dir, build("train_*.txt", corpus_dir, 1))[0]
  heldout_dir = os.path.join(root, "data_heldout")
  build("heldout_*.txt", heldout_dir, 1)
  for layout in ("round_robin", "contiguous"):
    write_layout(order, data_dirs["rotated_round_robin"], data_dirs[layout],
                 layout)
  region_of = {record: _REGIONS * i // len(order)
               for i, record in enumerate(order)}
  records_trained = settings.num_train_steps * _BATCH_SIZE
  results = {"settings": {
      "num_examples": info.num_examples, "num_shards": info.num_shards,
      "num_train_steps": settings.num_train_steps,
      "records_trained": records_trained,
      "train_bytes_per_file": settings.train_bytes_per_file,
      "heldout_bytes_per_file": settings.heldout_bytes_per_file,
      "seed": settings.seed}}
  for layout in LAYOUTS:
    model_dir = os.path.join(root, f"run_{layout}")
    train(data_dirs[layout], settings.vocab_file, info.vocab_size, model_dir,
          settings.num_train_steps, settings.seed)
    per_batch, covered = stream_regions(data_dirs[layout], region_of,
                                        records_trained, settings.seed)
    results[layout] = {
        "regions_per_batch": per_batch, "regions_drawn_on": covered,
        "window_losses": window_losses(model_dir, settings.window_steps),
        "heldout": heldout_losses(model_dir, heldout_dir, settings.seed)}
  with open(os.path.join(root, "results.json"), "w",
            encoding="utf-8") as results_file:
    json.dump(results, results_file, indent=2)
  training_curves.write_png(os.path.join(root, "results.png"),
                            plot(results, settings.window_steps))
  print_table(results, settings.window_steps)


def plot(results, window_steps):
  """PNG bytes: the windowed training loss and the held-out loss, one line
  per layout."""
  plt = training_curves.pyplot()
  figure, (train_axis, heldout_axis) = plt.subplots(1, 2, figsize=(9, 3.4),
                                                    dpi=100)
  for layout in LAYOUTS:
    losses = results[layout]["window_losses"]
    train_axis.plot([window_steps * (window + 1)
                     for window in range(len(losses))], losses, label=layout)
    steps = sorted(results[layout]["heldout"], key=int)
    heldout_axis.plot([int(step) for step in steps],
                      [results[layout]["heldout"][step]["loss"]
                       for step in steps], marker="o", label=layout)
  for axis, title in ((train_axis, f"training loss ({window_steps}-step "
                                   "means)"),
                      (heldout_axis, "held-out loss")):
    axis.set_xlabel("step")
    axis.set_title(title)
    axis.grid(alpha=0.3)
  heldout_axis.legend()
  return training_curves.figure_png(figure)


def print_table(results, window_steps):
  """The comparison as Markdown tables on stdout."""
  print(f"\n{results['settings']}\n")
  print("| | " + " | ".join(LAYOUTS) + " |")
  print("|---" * (len(LAYOUTS) + 1) + "|")
  print("| corpus tenths per batch (of 16 records) | " + " | ".join(
      f"{results[layout]['regions_per_batch']:.2f}" for layout in LAYOUTS)
        + " |")
  print("| corpus tenths drawn on in training | " + " | ".join(
      f"{results[layout]['regions_drawn_on']:.0%}" for layout in LAYOUTS)
        + " |")
  for window, losses in enumerate(zip(*(results[layout]["window_losses"]
                                        for layout in LAYOUTS))):
    print(f"| train loss, steps {window * window_steps + 1}-"
          f"{(window + 1) * window_steps} | "
          + " | ".join(f"{loss:.3f}" for loss in losses) + " |")
  for step in sorted(results[LAYOUTS[0]]["heldout"], key=int):
    cells = [results[layout]["heldout"][step] for layout in LAYOUTS]
    print(f"| held-out loss at step {step} | " + " | ".join(
        f"{cell['loss']:.3f}" for cell in cells) + " |")


def main(argv):
  del argv  # Unused.
  try:
    run_study(flags.FLAGS)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)


if __name__ == "__main__":
  app.run(main)
