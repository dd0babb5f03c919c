"""The pretraining input of a run that resumes on the same data stream.

`Model.fit` makes its own iterator from the dataset it is given, and that
iterator cannot be reached to checkpoint it (and multi-device iterators cannot
be saved at all). Instead the stream is a pure function of the seed: files and
records are shuffled with fixed seeds, so the dataset yields the same batches
in the same order every time it is built, and a resumed run skips the batches
the steps already done consumed. The skipped batches are read and parsed but
not trained on: measured 60,000-100,000 examples/s on 2 busy CPU cores
(64-token records), so resuming ELECTRA-Small at step 500K (64M examples)
spends roughly 10-20 minutes catching up, less on a many-core host.
"""

from official_electra.data import pretraining_dataloader


def consumed_batches_per_pipeline(completed_steps, num_replicas_in_sync,
                                  num_input_pipelines):
  """Per-replica batches each input pipeline gave for `completed_steps`."""
  return completed_steps * num_replicas_in_sync // num_input_pipelines


def make_dataset_fn(train_data, global_batch_size, max_seq_length, vocab_size,
                    seed, completed_steps, num_replicas_in_sync,
                    shuffle_buffer_size=10000):
  """A `dataset_fn` for `strategy.distribute_datasets_from_function`.

  Args:
    train_data: TFRecord glob(s) or a dataset directory.
    global_batch_size: examples per step over all replicas.
    max_seq_length: the model's sequence length.
    vocab_size: the model's vocabulary size, checked against the data.
    seed: the shuffling seed (the same on every restart).
    completed_steps: steps already trained (the restored step counter).
    num_replicas_in_sync: the strategy's replica count.
    shuffle_buffer_size: records in the shuffle buffer.

  Returns:
    `InputContext -> tf.data.Dataset` of per-replica batches.
  """

  def dataset_fn(input_context):
    dataset = pretraining_dataloader.pretraining_dataset(
        train_data, global_batch_size, max_seq_length, vocab_size=vocab_size,
        input_context=input_context, shuffle_buffer_size=shuffle_buffer_size,
        seed=seed)
    return dataset.skip(consumed_batches_per_pipeline(
        completed_steps, num_replicas_in_sync,
        input_context.num_input_pipelines))

  return dataset_fn
