"""Which shard each example goes to, in plain Python, as independent
statements to test `tfrecords_tools` against: the original ELECTRA tool's
dealing, and our rotation of its shards."""


def original_files(examples, num_out_files, num_jobs=1, job_id=0):
  """`{file index: [examples, in the order written]}` of one job of the
  original tool.

  From google-research/electra, build_pretraining_dataset.py, class
  `ExampleWriter`: `__init__` opens the files `i` in `range(num_out_files)`
  with `i % num_jobs == job_id`, in increasing order, as `self._writers`;
  `write_examples` writes each example the job builds, in the order it
  builds them, to `self._writers[self.n_written % len(self._writers)]`, then
  adds one to `self.n_written`. (Module-level `write_examples` hands job
  `job_id` the corpus files `i % num_processes == job_id`, in a random order;
  with one job the examples come in the order of its files.)

  Args:
    examples: the job's examples, in the order it builds them.
    num_out_files: `num_out_files` (the number of shards).
    num_jobs: `--num-processes`.
    job_id: this job.
  """
  writers = [i for i in range(num_out_files) if i % num_jobs == job_id]
  files = {i: [] for i in writers}
  n_written = 0
  for example in examples:
    files[writers[n_written % len(writers)]].append(example)
    n_written += 1
  return files


def rotated_files(examples, offsets, total_bytes, num_shards):
  """Our shards: the original's files (one job), file k rotated to start at
  its first example whose unit starts at or after byte
  `k * total_bytes // num_shards` of the corpus.

  Args:
    examples: the examples in corpus order.
    offsets: for each example, the corpus byte offset of its unit.
    total_bytes: the corpus's bytes.
    num_shards: the number of shards.

  Returns:
    `[examples of shard k, in file order]`.
  """
  files = original_files(list(zip(offsets, examples)), num_shards)
  shards = []
  for shard in range(num_shards):
    point = shard * total_bytes // num_shards
    part = files[shard]
    start = next((j for j, (offset, _) in enumerate(part) if offset >= point),
                 len(part))
    shards.append([example for _, example in part[start:] + part[:start]])
  return shards
