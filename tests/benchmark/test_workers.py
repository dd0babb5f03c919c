"""`workers.write_results`: the benchmarks' JSON, on any filesystem."""

import json
import uuid

from official_electra import files
from official_electra.benchmark import workers


def test_results_are_written_under_ram_in_their_order():
  root = f"ram://benchmark-{uuid.uuid4().hex}"
  path = f"{root}/results/finetune.json"
  results = {"settings": {"model": "tiny"}, "cpu": {"cores": 2},
             "implementations": {"ours": {"examples_per_second": 1.5}}}
  try:
    workers.write_results(path, results)
    text = files.read_text(path)
    assert files.listdir(f"{root}/results") == ["finetune.json"]
  finally:
    files.remove_tree(root)
  assert text == json.dumps(results, indent=2)
  assert list(json.loads(text)) == ["settings", "cpu", "implementations"]
