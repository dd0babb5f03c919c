"""The gradient-accumulation memory benchmark runs and writes its JSON."""

import json
import subprocess
import sys


def test_command_prints_the_table_and_writes_the_json(tmp_path):
  output = tmp_path / "accumulation.json"
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.benchmark.accumulation_memory",
       "--model=tiny", "--batch_size=8", "--seq_len=16",
       "--accumulation_steps=4", "--steps=1", f"--output={output}"],
      capture_output=True, text=True, check=False, timeout=600)
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "native bfloat16" in completed.stdout
  results = json.loads(output.read_text())
  entries = results["configurations"]
  assert list(entries) == ["micro_batch_alone", "accumulated", "whole_batch"]
  assert [entries[name]["examples_per_pass"] for name in entries] == [2, 2, 8]
  assert [entries[name]["examples_per_step"] for name in entries] == [2, 8, 8]
  for entry in entries.values():
    assert entry["peak_memory_mib"] > 0 and entry["seconds_per_step"] > 0
    assert entry["last_loss"] > 0
