"""Mirrored (two logical CPUs) and multi-worker (two local processes) runs take
the same steps as one device on the same global batch.

Records hold only `[CLS]`, `[MASK]`, `[SEP]` and padding: nothing can be
masked, so the random masking draws (which depend on the per-replica batch
shape) do not matter and the steps are deterministic; the discriminator still
trains on them. Rows have different lengths and replica 0 gets other rows than
replica 1, so a loss normalised per replica instead of over the global batch,
or gradients not summed over replicas, would change the weights.
"""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from official_electra.tokenization import vocabulary
from tests.training import tiny_pretraining

_TIMEOUT_SECONDS = 300


def _record(ids, seq_length):
  ids = list(ids) + [0] * (seq_length - len(ids))
  mask = [int(token != 0) for token in ids]
  features = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=values))
              for name, values in (("input_ids", ids), ("input_mask", mask),
                                   ("segment_ids", [0] * seq_length))}
  return tf.train.Example(
      features=tf.train.Features(feature=features)).SerializeToString()


def _write(path, rows):
  with tf.io.TFRecordWriter(str(path)) as writer:
    for _ in range(8):
      for row in rows:
        writer.write(row)


@pytest.fixture(scope="module")
def unmaskable_data(tmp_path_factory, pretraining_data):
  _, vocab_file, _ = pretraining_data
  special = vocabulary.load_vocabulary(str(vocab_file)).special_token_ids()
  cls, sep, mask = special["[CLS]"], special["[SEP]"], special["[MASK]"]
  seq_length = tiny_pretraining.SEQ_LENGTH
  short = _record([cls] + [mask] * 4 + [sep], seq_length)
  long = _record([cls] + [mask] * 20 + [sep] + [mask] * 5 + [sep], seq_length)
  root = tmp_path_factory.mktemp("unmaskable")
  for name, rows in (("together", [short, short, long, long]),
                     ("workers", None)):
    (root / name).mkdir()
  _write(root / "together" / "records.tfrecord", [short, short, long, long])
  # One file per worker: worker 0 reads the short rows, worker 1 the long.
  _write(root / "workers" / "records_0.tfrecord", [short])
  _write(root / "workers" / "records_1.tfrecord", [long])
  return root, vocab_file


def _run(strategy, data_dir, vocab_file, model_dir, env=None):
  return subprocess.Popen(
      [sys.executable, "-m", "tests.training.distributed_run", strategy,
       str(data_dir / "*.tfrecord"), str(vocab_file), str(model_dir)],
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **(env or {})),
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait(processes):
  for process in processes:
    output, _ = process.communicate(timeout=_TIMEOUT_SECONDS)
    assert process.returncode == 0, output[-3000:]


def _model_weights(model_dir, step):
  reader = tf.train.load_checkpoint(os.path.join(model_dir, f"ckpt-{step}"))
  return {name: reader.get_tensor(name)
          for name in reader.get_variable_to_shape_map()
          if name.startswith("model/") and "seed_generator" not in name}


def _free_ports(count):
  sockets = [socket.socket() for _ in range(count)]
  for sock in sockets:
    sock.bind(("127.0.0.1", 0))
  ports = [sock.getsockname()[1] for sock in sockets]
  for sock in sockets:
    sock.close()
  return ports


def test_mirrored_and_multi_worker_match_one_device(tmp_path, unmaskable_data):
  root, vocab_file = unmaskable_data
  ports = _free_ports(2)
  cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
  processes = [
      _run("one_device", root / "together", vocab_file, tmp_path / "single"),
      _run("mirrored", root / "together", vocab_file, tmp_path / "mirrored")]
  processes += [
      _run("multi_worker_mirrored", root / "workers", vocab_file,
           tmp_path / "multi_worker",
           env={"TF_CONFIG": json.dumps(
               {"cluster": cluster, "task": {"type": "worker", "index": i}})})
      for i in range(2)]
  _wait(processes)
  single = _model_weights(tmp_path / "single", 3)
  moved = max(np.abs(single[name] - value).max()
              for name, value in _model_weights(tmp_path / "single", 1).items())
  assert moved > 1e-3  # Training changed the weights well beyond tolerance.
  for run in ("mirrored", "multi_worker"):
    weights = _model_weights(tmp_path / run, 3)
    assert sorted(weights) == sorted(single)
    for name, value in single.items():
      np.testing.assert_allclose(weights[name], value, rtol=0, atol=2e-5,
                                 err_msg=f"{run}: {name}")
