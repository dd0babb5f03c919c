"""One parity run: ELECTRA or MLM pretrained by our code or by the reference,
from the same initial weights on the same batches, evaluated at every kept
step on one fixed set of corruptions.

For seed `s`, both sides start from the weights our pretrainer draws with
seed `s` (the reference gets them through our Hugging Face conversion) and
train on the same batches in the same order (our input pipeline's stream
for shuffling seed `s`, read once and cached). Each side draws its own
masks, samples and dropout: the runs are two independent implementations
of one procedure, not one computation done twice (the step-exact test in
tests/parity/ does that).

Evaluation: a fixed set of batches, each with fixed masking and sampling
uniforms (`ours.noise_of_seeds` of fixed seeds). At a kept step each side
masks them with those uniforms, its own generator predicts and samples,
its own discriminator labels; metrics are computed here, the same way for
both sides: the generator's (or MLM's) loss and accuracy at the masked
slots, and the discriminator's loss and AUC over the real tokens. No
dropout in evaluation.
"""

import dataclasses
import os
import time

import numpy as np
import tensorflow as tf
import tf_keras

from official_electra import files
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.optimization import optimizer_factory
from official_electra.parity import ours
from official_electra.training import architecture as architecture_lib
from official_electra.training import resumable_input
from official_electra.tokenization import vocabulary as vocabulary_lib

SIDES = ("ours", "reference")
# Seeds of the fixed evaluation set: batches (a shuffling seed no run
# trains with) and the masking and sampling draws.
EVAL_DATA_SEED = 987_654
EVAL_NOISE_SEED = 4_242


@dataclasses.dataclass(frozen=True)
class ParitySettings:
  """What every run of one parity study shares.

  Attributes:
    encoder: the discriminator's (main network's) `EncoderConfig`.
    generator_hidden_fraction: generator width / discriminator width.
    max_seq_length: the records' length.
    batch_size: examples per step.
    num_steps: steps of every run (the learning rate decays to 0 there).
    warmup_proportion: fraction of `num_steps` warming up.
    learning_rates: `{objective: peak learning rate}`.
    eval_every: steps between kept steps (step 0 is kept too).
    eval_batches: batches in the fixed evaluation set.
    mask_prob: fraction of tokens masked.
    shuffle_buffer_size: our input pipeline's shuffle window.
  """
  encoder: encoder_config_lib.EncoderConfig
  generator_hidden_fraction: float = 0.25
  max_seq_length: int = 64
  batch_size: int = 64
  num_steps: int = 2000
  warmup_proportion: float = 0.1
  learning_rates: dict = dataclasses.field(default_factory=lambda: {
      "electra": 1.25e-4, "mlm": 5e-4})
  eval_every: int = 100
  eval_batches: int = 4
  mask_prob: float = 0.15
  shuffle_buffer_size: int = 10000

  @property
  def num_warmup_steps(self):
    return int(self.warmup_proportion * self.num_steps)

  def kept_steps(self):
    return list(range(0, self.num_steps, self.eval_every)) + [self.num_steps]


def architecture(settings, objective, vocabulary):
  return architecture_lib.PretrainingArchitecture(
      encoder=settings.encoder,
      generator_hidden_fraction=settings.generator_hidden_fraction,
      generator_layers_fraction=1.0, objective=objective,
      uniform_generator=False, max_seq_length=settings.max_seq_length,
      mask_prob=settings.mask_prob,
      special_token_ids=vocabulary.special_token_ids())


def read_batches(train_data, settings, seed, num_batches, cache_path=None):
  """`num_batches` batches of our input pipeline's stream for shuffling
  `seed`, as NumPy arrays `[num_batches, batch, seq]` (cached at
  `cache_path`, an .npz written atomically)."""
  if cache_path and files.exists(cache_path):
    with np.load(cache_path) as cached:
      if len(cached["input_word_ids"]) >= num_batches:
        return {key: cached[key][:num_batches] for key in cached.files}
  dataset = resumable_input.make_dataset_fn(
      train_data, settings.batch_size, settings.max_seq_length,
      settings.encoder.vocab_size, seed, 0, 1,
      settings.shuffle_buffer_size)(tf.distribute.InputContext())
  arrays = {"input_word_ids": [], "input_mask": [], "input_type_ids": []}
  for batch in dataset.take(num_batches):
    for key in arrays:
      arrays[key].append(batch[key].numpy())
  if len(arrays["input_word_ids"]) < num_batches:
    raise ValueError(f"{train_data}: gave {len(arrays['input_word_ids'])} "
                     f"batches of {settings.batch_size}, {num_batches} are "
                     "needed; pass more data or fewer --num_steps")
  arrays = {key: np.stack(value) for key, value in arrays.items()}
  if cache_path:
    files.makedirs(os.path.dirname(cache_path))
    temporary = cache_path + ".partial.npz"
    np.savez(temporary, **arrays)
    os.replace(temporary, cache_path)
  return arrays


def batch_at(batches, index):
  return {key: value[index] for key, value in batches.items()}


def auc(labels, scores):
  """Area under the ROC curve (ties count one half): the probability that a
  random positive scores above a random negative."""
  labels = np.asarray(labels, bool)
  scores = np.asarray(scores, np.float64)
  positives, negatives = labels.sum(), (~labels).sum()
  if positives == 0 or negatives == 0:
    return float("nan")
  order = np.argsort(scores, kind="mergesort")
  ranks = np.empty(len(scores))
  sorted_scores = scores[order]
  # Average ranks over ties.
  _, first, counts = np.unique(sorted_scores, return_index=True,
                               return_counts=True)
  average = first + (counts - 1) / 2.0 + 1.0
  ranks[order] = np.repeat(average, counts)
  return float((ranks[labels].sum() - positives * (positives + 1) / 2.0)
               / (positives * negatives))


def _log_softmax(logits):
  logits = logits - logits.max(-1, keepdims=True)
  return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def evaluation_metrics(pieces, objective):
  """Metrics of one side at one kept step from the evaluation batches'
  outputs: each piece holds `mlm_logits` `[B, N, V]`, `masked_ids`,
  `weights` `[B, N]`, and for `electra` `rtd_logits`, `labels`, `input_mask`
  `[B, S]`."""
  losses, correct, slots = 0.0, 0.0, 0.0
  rtd_loss, tokens, all_labels, all_scores = 0.0, 0.0, [], []
  for piece in pieces:
    log_probabilities = _log_softmax(piece["mlm_logits"].astype(np.float64))
    target = np.take_along_axis(log_probabilities,
                                piece["masked_ids"][..., None], -1)[..., 0]
    weights = piece["weights"]
    losses += float(-(target * weights).sum())
    correct += float(((log_probabilities.argmax(-1) == piece["masked_ids"])
                      * weights).sum())
    slots += float(weights.sum())
    if objective == "electra":
      real = piece["input_mask"].astype(bool)
      logits = piece["rtd_logits"].astype(np.float64)[real]
      labels = piece["labels"][real]
      rtd_loss += float((np.logaddexp(0.0, logits) - labels * logits).sum())
      tokens += float(real.sum())
      all_labels.append(labels)
      all_scores.append(logits)
  metrics = {"mlm_loss": losses / slots, "mlm_accuracy": correct / slots}
  if objective == "electra":
    labels = np.concatenate(all_labels)
    metrics.update(rtd_loss=rtd_loss / tokens,
                   disc_auc=auc(labels, np.concatenate(all_scores)),
                   replaced_fraction=float(labels.mean()))
  return metrics


class _OurSide:
  """Our pretrainer and optimizer, as `train.py` builds them."""

  def __init__(self, arch, settings, objective, seed):
    tf_keras.utils.set_random_seed(seed)
    tf_keras.backend.experimental.enable_tf_random_generator()
    self.objective = objective
    self.pretrainer = architecture_lib.build_pretrainer(arch, seed)
    self.pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
        "adamw", settings.learning_rates[objective], settings.num_steps,
        settings.num_warmup_steps))
    ids = tf.zeros([1, settings.max_seq_length], tf.int32)
    self.pretrainer({"input_word_ids": ids, "input_mask": tf.ones_like(ids),
                     "input_type_ids": ids})
    self.pretrainer.optimizer.build(self.pretrainer.trainable_variables)
    self._train_function = None

  def train(self, batches):
    """Trains on `batches` (a dataset of them); returns the mean loss."""
    if self._train_function is None:
      self._train_function = self.pretrainer.make_train_function()
    self.pretrainer.reset_metrics()
    iterator = iter(batches)
    logs = None
    for _ in range(len(batches)):
      logs = self._train_function(iterator)
    return float(logs["loss"])

  def evaluate(self, batch, noise, seeds):
    del noise
    outputs = self.pretrainer(batch, training=False, seeds=seeds)
    return _evaluation_piece(
        self.objective, batch, outputs, mlm_logits="generator_logits",
        masked_ids="masked_ids", weights="masked_weights",
        rtd_logits="discriminator_logits", labels="replaced_token_labels")


class _ReferenceSide:
  """The PyTorch reference from our initial weights."""

  def __init__(self, arch, settings, objective, seed, our_pretrainer):
    import torch  # pylint: disable=g-import-not-at-top
    from official_electra.parity import reference  # pylint: disable=g-import-not-at-top
    from official_electra.parity import torch_side  # pylint: disable=g-import-not-at-top
    self.torch, self.reference, self.torch_side = torch, reference, torch_side
    torch.manual_seed(seed)
    special = arch.special_token_ids
    self.objective = objective
    self.settings = reference.Settings(
        objective=objective, mask_token_id=special["[MASK]"],
        never_masked_ids=architecture_lib.never_masked_token_ids(special),
        max_predictions_per_seq=arch.max_predictions_per_seq,
        mask_prob=settings.mask_prob)
    self.model = torch_side.build_reference(our_pretrainer, self.settings)
    self.optimizer = reference.ReferenceAdamW(
        self.model.named_parameters(), settings.learning_rates[objective],
        settings.num_steps, settings.num_warmup_steps)
    self.generator = torch.Generator().manual_seed(seed)
    self.vocab_size = settings.encoder.vocab_size

  def train(self, batches):
    total = 0.0
    self.model.train()
    for batch in batches:
      inputs = self.torch_side.torch_batch(batch)
      batch_size, seq_len = inputs["input_ids"].shape
      noise = self.reference.draw_noise(self.settings, batch_size, seq_len,
                                        self.vocab_size, self.generator)
      self.optimizer.zero_grad()
      outputs = self.model(inputs, noise)
      outputs["loss"].backward()
      self.optimizer.step()
      total += float(outputs["loss"].detach())
    return total / len(batches)

  def evaluate(self, batch, noise, seeds):
    del seeds
    self.model.eval()
    with self.torch.no_grad():
      outputs = self.model(self.torch_side.torch_batch(batch),
                           self.torch_side.torch_noise(noise))
    return _evaluation_piece(
        self.objective, batch, outputs, mlm_logits="mlm_logits",
        masked_ids="masked_ids", weights="weights", rtd_logits="rtd_logits",
        labels="labels")


def _evaluation_piece(objective, batch, outputs, **names):
  """What `evaluation_metrics` reads, as NumPy arrays, from one side's
  `outputs` (`names`: each field's key there)."""
  fields = ["mlm_logits", "masked_ids", "weights"]
  if objective == "electra":
    fields += ["rtd_logits", "labels"]
  piece = {field: np.asarray(outputs[names[field]]) for field in fields}
  if objective == "electra":
    piece["input_mask"] = np.asarray(batch["input_mask"])
  return piece


def run_name(objective, side, seed):
  return f"{objective}_{side}_seed{seed}"


def run(output_dir, train_data, vocab_file, settings, objective, side, seed,
        log=print):
  """One run; writes `output_dir/runs/<run_name>.json` and returns its
  record (read back when the file is already there: the study resumes run
  by run)."""
  path = os.path.join(output_dir, "runs", run_name(objective, side, seed)
                      + ".json")
  if files.exists(path):
    return files.read_json(path)
  vocabulary = vocabulary_lib.load_vocabulary(vocab_file)
  arch = architecture(settings, objective, vocabulary)
  batches = read_batches(train_data, settings, seed, settings.num_steps,
                         os.path.join(output_dir, "cache",
                                      f"train_seed{seed}.npz"))
  eval_batches = read_batches(train_data, settings, EVAL_DATA_SEED,
                              settings.eval_batches,
                              os.path.join(output_dir, "cache", "eval.npz"))
  eval_seeds_generator = tf.random.Generator.from_seed(EVAL_NOISE_SEED)
  slots = arch.max_predictions_per_seq
  eval_set = []
  for index in range(settings.eval_batches):
    seeds = eval_seeds_generator.make_seeds(3)
    eval_set.append((batch_at(eval_batches, index), seeds, ours.noise_of_seeds(
        seeds, settings.batch_size, settings.max_seq_length, slots,
        settings.encoder.vocab_size, sampling=objective == "electra")))
  our_side = _OurSide(arch, settings, objective, seed)
  trainer = our_side
  if side == "reference":
    trainer = _ReferenceSide(arch, settings, objective, seed,
                             our_side.pretrainer)
  curve = []
  started = time.time()
  kept = settings.kept_steps()
  step = 0
  train_loss = None
  for kept_step in kept:
    if kept_step > step:
      chunk = [batch_at(batches, index) for index in range(step, kept_step)]
      if side == "ours":
        chunk = tf.data.Dataset.from_tensor_slices(
            {key: value[step:kept_step] for key, value in batches.items()})
      train_loss = trainer.train(chunk)
      step = kept_step
    metrics = evaluation_metrics(
        [trainer.evaluate(batch, noise, seeds)
         for batch, seeds, noise in eval_set], objective)
    metrics.update(step=step, train_loss=train_loss)
    curve.append(metrics)
    log(f"{run_name(objective, side, seed)}: step {step}/{settings.num_steps} "
        + " ".join(f"{key} {value:.4f}" for key, value in metrics.items()
                   if key not in ("step",) and value is not None)
        + f" ({time.time() - started:.0f} s)")
  record = {"objective": objective, "side": side, "seed": seed,
            "seconds": time.time() - started, "curve": curve,
            "settings": {"num_steps": settings.num_steps,
                         "batch_size": settings.batch_size,
                         "max_seq_length": settings.max_seq_length,
                         "learning_rate": settings.learning_rates[objective],
                         "num_warmup_steps": settings.num_warmup_steps,
                         "encoder": settings.encoder.to_dict()
                         if hasattr(settings.encoder, "to_dict")
                         else dataclasses.asdict(settings.encoder)}}
  files.write_json(path, record)
  return record
