"""The pretraining input of a run that resumes on the same data stream.

`Model.fit` makes its own iterator from the dataset it is given, and that
iterator cannot be reached to checkpoint it (and multi-device iterators cannot
be saved at all). Instead the stream is a pure function of the seed
(`pretraining_dataloader.record_stream`): epoch e reads the files in an order
drawn for (seed, e) and permutes each window of `shuffle_buffer_size` records
by keys drawn for (seed, e), so the position of any step is known by
arithmetic. A resumed run skips the epochs already trained by their record
counts (`dataset_info.json`'s `shard_examples`) and reads only the part of the
current epoch before its step, raw (not parsed): the time to its first new
step is at most one epoch's read, whatever the step.
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
    shuffle_buffer_size: records in the shuffle buffer (a training stream
      permutes each window of this many records).

  Returns:
    `InputContext -> tf.data.Dataset` of per-replica batches.
  """

  def dataset_fn(input_context):
    return pretraining_dataloader.pretraining_dataset(
        train_data, global_batch_size, max_seq_length, vocab_size=vocab_size,
        input_context=input_context, shuffle_buffer_size=shuffle_buffer_size,
        seed=seed, skip_batches=consumed_batches_per_pipeline(
            completed_steps, num_replicas_in_sync,
            input_context.num_input_pipelines))

  return dataset_fn
