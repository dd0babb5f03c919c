"""One GLUE task fine-tuned by the PyTorch reference, for the fine-tuning
parity study (our seeds against the reference's, per task).

The reference (`finetuning_reference.py`) trains on exactly the inputs our
GLUE family feeds our classifier: the same files read by `data/glue.py`,
tokenized and packed by our `inputs.encode_examples`. What the authors'
recipe adds to the data is decided here, not read from our task table: MRPC
and STS-B train on both sentence orders (their `double_unordered`). Epochs,
batch size and the optimizer's settings are read from our
`FinetuneHyperparameters`, so both sides run one recipe; like ours, an epoch
is `n // batch_size` shuffled batches (the authors pad the training set to
a multiple of the batch and read it as a repeated stream instead). The dev
metrics are computed by our `finetuning/metrics.py` (through
`tasks.GlueTask.compute_metrics`), so both sides are scored alike.
"""

import os

import numpy as np
import torch

from official_electra.data import glue
from official_electra.finetuning import inputs
from official_electra.finetuning import tasks
from official_electra.modeling import model_config
from official_electra.modeling import pretrained
from official_electra.parity import finetuning_reference
from official_electra.parity import torch_side
from official_electra.tokenization import wordpiece_tokenizer

# The authors' `double_unordered` tasks (`classification_tasks.MRPC`, `STS`).
DOUBLE_UNORDERED_TASKS = ("MRPC", "STS-B")


def reference_settings(task, hyperparameters):
  """The reference's `Settings` of our `FinetuneHyperparameters` for
  `task` (a `tasks.GlueTask`)."""
  divisor = 1.0
  if task.is_regression and hyperparameters.scale_regression_targets:
    divisor = task.max_score
  return finetuning_reference.Settings(
      num_outputs=task.num_outputs,
      peak_learning_rate=hyperparameters.learning_rate,
      loss_reduction=hyperparameters.loss_reduction,
      layerwise_decay_rate=hyperparameters.layerwise_decay_rate,
      layerwise_decay_rule=hyperparameters.layerwise_decay_rule,
      warmup_proportion=hyperparameters.warmup_proportion,
      weight_decay_rate=hyperparameters.weight_decay_rate,
      dropout_rate=hyperparameters.dropout_rate,
      regression_divisor=divisor,
      clip_norm=hyperparameters.gradient_clip_norm)


def _training_examples(glue_dir, task_name):
  examples = glue.read_split(glue_dir, task_name, "train")
  if task_name in DOUBLE_UNORDERED_TASKS:
    examples += [glue.GlueExample(example.example_id + "-reversed",
                                  example.text_b, example.text_a,
                                  example.label) for example in examples]
  return examples


def _torch_rows(features, rows):
  """Rows of packed features as the reference's int64 tensors, cut to their
  longest real sequence (padding changes no output: it is masked out of
  attention and the head reads `[CLS]`)."""
  longest = int(features["input_mask"][rows].sum(axis=1).max())
  return torch_side.torch_batch(
      {key: value[rows, :longest] for key, value in features.items()})


def predict(model, settings, features, batch_size):
  """Class ids, or a regression's scores in the task's units, `[n]`."""
  model.eval()
  num_examples = len(features["input_mask"])
  outputs = []
  with torch.no_grad():
    for start in range(0, num_examples, batch_size):
      batch = _torch_rows(features, np.arange(
          start, min(start + batch_size, num_examples)))
      outputs.append(model(batch["input_ids"], batch["input_mask"],
                           batch["token_type_ids"]).numpy())
  model.train()
  outputs = np.concatenate(outputs)
  if settings.is_regression:
    return outputs[:, 0] * settings.regression_divisor
  return np.argmax(outputs, axis=-1)


def finetune_glue_reference(task_name, glue_dir, init_checkpoint,
                            hyperparameters, seed, vocab_file=None,
                            lower_case=True):
  """Fine-tunes the discriminator of `init_checkpoint` on one GLUE task with
  the reference, one seed.

  Args:
    task_name: a GLUE task (`tasks.get_task`).
    glue_dir: the folder of the task folders.
    init_checkpoint: any checkpoint folder `pretrained.load_encoder` reads.
    hyperparameters: our `trainer.FinetuneHyperparameters` (the recipe's
      values filled in); `max_train_examples` is not supported.
    seed: seeds the head's initialisation, dropout and the batch order.
    vocab_file: the WordPiece vocabulary; by default `vocab.txt` beside the
      checkpoint.
    lower_case: whether the tokenizer lower-cases.

  Returns:
    `{metric key: value}` on the task's dev splits after the last epoch, as
    our `GlueFamily.evaluate` keys them.
  """
  if hyperparameters.max_train_examples is not None:
    raise ValueError("the reference trains on the whole training set: "
                     "leave max_train_examples at None")
  task = tasks.get_task(task_name)
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(
      vocab_file or os.path.join(model_config.folder_of(init_checkpoint),
                                 "vocab.txt"), lower_case=lower_case)
  max_seq_length = hyperparameters.max_seq_length
  examples = _training_examples(glue_dir, task_name)
  features = inputs.encode_examples(examples, tokenizer, max_seq_length)
  labels = torch.from_numpy(task.encode_labels(examples))
  batch_size = hyperparameters.batch_size
  steps_per_epoch = len(examples) // batch_size
  if not steps_per_epoch:
    raise ValueError(f"{task_name}: {len(examples)} training examples make "
                     f"no batch of {batch_size}")
  num_epochs = hyperparameters.num_train_epochs or task.num_train_epochs

  torch.manual_seed(seed)
  encoder = pretrained.load_encoder(init_checkpoint)
  settings = reference_settings(task, hyperparameters)
  model = finetuning_reference.ReferenceClassifier(
      torch_side.reference_encoder(encoder), task.num_outputs,
      settings.dropout_rate).train()
  optimizer = finetuning_reference.FinetuningAdamW(
      model, settings, steps_per_epoch * num_epochs, encoder.num_layers)
  order_rng = np.random.default_rng(seed)
  for _ in range(num_epochs):
    order = order_rng.permutation(len(examples))
    for step in range(steps_per_epoch):
      rows = order[step * batch_size:(step + 1) * batch_size]
      finetuning_reference.train_step(model, optimizer, settings,
                                      _torch_rows(features, rows),
                                      labels[rows])

  metrics = {}
  for split in task.dev_splits:
    dev_examples = glue.read_split(glue_dir, task_name, split)
    predictions = predict(
        model, settings,
        inputs.encode_examples(dev_examples, tokenizer, max_seq_length),
        hyperparameters.eval_batch_size)
    metrics.update(task.compute_metrics(split, task.encode_labels(dev_examples),
                                        predictions))
  return metrics
