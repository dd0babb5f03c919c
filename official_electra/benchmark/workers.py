"""Worker processes for the serving and fine-tuning benchmarks, and the CPU.

Each implementation a benchmark compares runs in its own process (spawned,
so nothing the coordinator imported or built is in it, and its peak memory is
its own). A worker builds its handler once, then answers calls from the
coordinator, which runs the implementations in turn, alternating, so load on
a shared machine falls on all of them alike.

The worker imports only what its builder imports: the serving benchmark's
SavedModel worker loads the export with TensorFlow and TF Text alone, as TF
Serving does, without this project's code.
"""

import json
import multiprocessing
import os
import resource
import subprocess
import sys
import time

_BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")


class WorkerError(RuntimeError):
  """A worker failed to start or to answer a call; says which and why."""


def _serve(builder, settings, connection):
  """The worker's loop: build, report ready, answer calls until stopped."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  try:
    start = time.perf_counter()
    handler = builder(settings)
    connection.send(("ready", {
        "startup_seconds": time.perf_counter() - start,
        # What a SavedModel worker needed of ours: nothing past this package.
        "official_electra_modules": sorted(
            name for name in sys.modules
            if name.startswith("official_electra")),
    }))
    while True:
      command, payload = connection.recv()
      if command == "stop":
        connection.send(("stopped", peak_memory_mib()))
        return
      connection.send(("result", handler(payload)))
  except Exception as error:  # pylint: disable=broad-except
    connection.send(("error", f"{type(error).__name__}: {error}"))


def prepare_torch_environment():
  """Settings for a PyTorch worker, before it imports torch or transformers.

  transformers would import TensorFlow too (`USE_TF=0`). PyTorch's OpenMP
  threads (libgomp) spin a while before they sleep when they wait for each
  other: on a machine shared with another job a spinning thread takes the
  core its partner needs: a 2-thread Small fine-tuning step measured 3.8x
  slower (a tiny one over 20x) than with `OMP_WAIT_POLICY=PASSIVE`
  (threads sleep at once). Set
  either variable in the environment to override.
  """
  os.environ.setdefault("USE_TF", "0")
  os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def peak_memory_mib():
  """This process's peak resident memory, MiB.

  Linux's `VmHWM`, which starts afresh at `exec`: `ru_maxrss` keeps the
  spawning parent's resident size from before the `exec` when that was
  larger (a coordinator holding TensorFlow), so a lighter worker would
  report the parent's.
  """
  try:
    with open("/proc/self/status", encoding="ascii") as status:
      for line in status:
        if line.startswith("VmHWM:"):
          return int(line.split()[1]) / 1024
  except OSError:
    pass
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Worker:
  """One implementation in its own process.

  Args:
    name: how errors name it.
    builder: a module-level function `settings -> handler`, run in the
      worker; `handler(payload)` answers each `call`. Its module is imported
      in the worker, so it should import its libraries inside the function.
    settings: picklable arguments of `builder`.
  """

  def __init__(self, name, builder, settings):
    self.name = name
    context = multiprocessing.get_context("spawn")
    self._connection, child = context.Pipe()
    # A daemon ends with the coordinator, also when it fails.
    self._process = context.Process(target=_serve,
                                    args=(builder, settings, child),
                                    daemon=True)
    self._process.start()
    self.ready = self._receive("ready")

  def call(self, payload):
    self._connection.send(("call", payload))
    return self._receive("result")

  def stop(self):
    """Ends the worker; returns its peak memory in MiB."""
    self._connection.send(("stop", None))
    memory = self._receive("stopped")
    self._process.join()
    return memory

  def _receive(self, expected):
    try:
      status, detail = self._connection.recv()
    except EOFError:
      self._process.join()
      raise WorkerError(f"{self.name}: the worker died (exit code "
                        f"{self._process.exitcode}; out of memory?)") from None
    if status == "error":
      self._process.join()
      raise WorkerError(f"{self.name}: {detail}")
    assert status == expected, (status, expected)
    return detail


def cpu_description():
  """`{"model_name", "bfloat16", "cores"}`: what figures depend on.

  `bfloat16` lists the native bfloat16 flags the CPU has (`avx512_bf16`,
  `amx_bf16`); empty means bfloat16 matmuls are emulated. Figures from CPUs
  that differ here do not compare.
  """
  model_name = "unknown"
  flags = set()
  try:
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True,
                           check=True).stdout
  except (OSError, subprocess.CalledProcessError):
    lscpu = ""
  for line in lscpu.splitlines():
    key, _, value = line.partition(":")
    if key.strip() == "Model name":
      model_name = value.strip()
    elif key.strip() == "Flags":
      flags = set(value.split())
  return {"model_name": model_name,
          "bfloat16": [flag for flag in _BFLOAT16_FLAGS if flag in flags],
          "cores": os.cpu_count()}


def cpu_line(cpu):
  """One line for a benchmark's table."""
  bfloat16 = (", ".join(cpu["bfloat16"]) if cpu["bfloat16"]
              else "none (emulated)")
  return (f"CPU: {cpu['model_name']}, {cpu['cores']} cores; "
          f"native bfloat16: {bfloat16}")


def write_results(path, results):
  """Writes a benchmark's results as indented JSON, atomically, on any
  filesystem (`files.write_text`); keys stay in the results' order."""
  # Imported here: it imports TensorFlow, which a worker must not hold unless
  # its builder imports it.
  from official_electra import files  # pylint: disable=g-import-not-at-top
  files.write_text(path, json.dumps(results, indent=2))
