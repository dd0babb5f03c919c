"""One pass of the data tool over the corpus: its units processed in order
(in this process or by a pool of workers, a bounded number in flight),
their records dealt to the shards and committed as it goes (resumable after
the last commit), with a progress line.
"""

import collections
import multiprocessing
import sys
import time

import numpy as np

from tfrecords_tools import corpus_reader
from tfrecords_tools import unit_processor

_MIN_UNIT_BYTES = 4 << 10
_MAX_UNIT_BYTES = 1 << 20
_MIN_COMMIT_BYTES = 64 << 10
_MAX_COMMIT_BYTES = 64 << 20
_UNITS_IN_FLIGHT_PER_WORKER = 2
_PROGRESS_SECONDS = 5.0
# The counts of a build, in its dataset_info.json.
COUNT_NAMES = ("num_documents", "num_tokens", "num_truncated_tokens",
               "num_examples", "num_replaced_bytes",
               "num_malformed_json_lines")


def log(message: str) -> None:
  """The data tool's progress and warnings, on stderr."""
  print(message, file=sys.stderr, flush=True)


def unit_bytes(total_bytes: int) -> int:
  """About 64 units in all, each between 4 KiB and 1 MiB."""
  return min(_MAX_UNIT_BYTES, max(_MIN_UNIT_BYTES, total_bytes // 64))


def _commit_bytes(total_bytes: int) -> int:
  """Records held between commits: about 1/16 of the corpus's bytes, between
  64 KiB and 64 MiB."""
  return min(_MAX_COMMIT_BYTES, max(_MIN_COMMIT_BYTES, total_bytes // 16))


class _InProcessResult:
  """The `AsyncResult` interface for work done in this process."""

  def __init__(self, value):
    self._value = value

  def get(self):
    return self._value


class _Progress:
  """Counts of the whole build and a periodic progress line."""

  def __init__(self, total_bytes: int, counts: dict):
    self.counts = collections.Counter(counts)
    self._total_bytes = total_bytes
    self._start = self._last = time.monotonic()
    self._new_tokens = 0

  def add(self, counts: dict) -> None:
    self.counts.update(counts)
    self._new_tokens += counts["num_tokens"]

  def report(self, bytes_done: int, force=False) -> None:
    now = time.monotonic()
    if not force and now - self._last < _PROGRESS_SECONDS:
      return
    self._last = now
    rate = self._new_tokens / max(now - self._start, 1e-9)
    log(f"{100 * bytes_done / self._total_bytes:5.1f}% "
         f"{self.counts['num_documents']:,} documents "
         f"{self.counts['num_tokens']:,} tokens "
         f"{self.counts['num_examples']:,} examples {rate:,.0f} tokens/s")


def write_shards(files, total_bytes, shards, vocab_size, num_workers,
                 worker_args):
  """Processes the corpus's units in order and deals their records to
  `shards`, committing as it goes; resumes after the last commit.

  Returns:
    `(counts, token_counts)`: the `COUNT_NAMES` totals and int64
    `[vocab_size]` occurrences of each id in the records.
  """
  resumed = shards.resume()
  if resumed is None:
    next_unit, token_counts = 0, np.zeros([vocab_size], np.int64)
    progress = _Progress(total_bytes, {})
  else:
    next_unit = resumed["next_unit"]
    token_counts = np.asarray(resumed["token_counts"], np.int64)
    progress = _Progress(total_bytes, resumed["counts"])
    log(f"resuming after {next_unit} units: "
         f"{progress.counts['num_examples']:,} examples already written")

  def commit(final=False):
    shards.commit({"next_unit": next_unit, "counts": dict(progress.counts),
                   "token_counts": token_counts.tolist()}, final=final)

  def write(start_offset, end_offset, result):
    nonlocal next_unit, token_counts
    shards.add(result.records, start_offset)
    token_counts += result.token_counts
    progress.add({"num_documents": result.num_documents,
                  "num_tokens": result.num_tokens,
                  "num_truncated_tokens": result.num_truncated_tokens,
                  "num_examples": len(result.records),
                  "num_replaced_bytes": result.num_replaced_bytes,
                  "num_malformed_json_lines": result.num_malformed_json_lines})
    next_unit = result.index + 1
    if shards.pending_bytes >= _commit_bytes(total_bytes):
      commit()
    progress.report(end_offset)

  if not shards.finished_writing:
    submit, pool = _submitter(num_workers, worker_args)
    in_flight = collections.deque()
    try:
      for unit in corpus_reader.iter_units(files, unit_bytes(total_bytes)):
        if unit.index < next_unit:
          continue
        in_flight.append((unit.start, unit.start + len(unit.data),
                          submit(unit)))
        while len(in_flight) > _UNITS_IN_FLIGHT_PER_WORKER * max(1,
                                                                 num_workers):
          start, end, result = in_flight.popleft()
          write(start, end, result.get())
      while in_flight:
        start, end, result = in_flight.popleft()
        write(start, end, result.get())
    finally:
      if pool is not None:
        pool.terminate()
    commit(final=True)
  shards.assemble()
  progress.report(total_bytes, force=True)
  return progress.counts, token_counts


def _submitter(num_workers, worker_args):
  """`(submit, pool)`: `submit(unit)` gives an `AsyncResult` of the unit's
  `UnitResult`, from `num_workers` processes (`pool`) or, for 0, from this
  one (`pool` None)."""
  if not num_workers:
    processor = unit_processor.UnitProcessor(*worker_args)
    return lambda unit: _InProcessResult(processor(unit)), None
  pool = multiprocessing.get_context("spawn").Pool(
      num_workers, initializer=unit_processor.init_worker,
      initargs=worker_args)
  return (lambda unit: pool.apply_async(unit_processor.process_in_worker,
                                        (unit,)), pool)
