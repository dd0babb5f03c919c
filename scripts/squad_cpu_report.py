"""Summarises scripts/squad_cpu.sh's runs: per-seed EM/F1, medians, and the
paired (same seed) differences of each pretrained encoder from random init.

Usage: python scripts/squad_cpu_report.py [RUNS_DIR] [OUTPUT_DIR]
Writes OUTPUT_DIR/results.json and OUTPUT_DIR/results.md.
"""

import json
import os
import statistics
import sys

ENCODERS = ("random_init", "electra", "mlm")
TASK = "SQuAD-1.1"


def _seeds(runs_dir, encoder):
  task_dir = os.path.join(runs_dir, encoder, TASK)
  seeds = {}
  for name in sorted(os.listdir(task_dir)) if os.path.isdir(task_dir) else ():
    path = os.path.join(task_dir, name, "eval_results.json")
    if name.startswith("seed_") and os.path.isfile(path):
      with open(path) as results:
        run = json.load(results)
      seeds[int(name[5:])] = dict(run["metrics"],
                                  train_seconds=run["train_seconds"],
                                  num_train_steps=run["num_train_steps"])
  return seeds


def main(runs_dir="runs/squad_cpu", output_dir="docs/experiments/squad_cpu"):
  results = {"task": TASK, "train": "dev-v1.1.json articles 0-39",
             "evaluate": "dev-v1.1.json articles 40-47", "encoders": {}}
  for encoder in ENCODERS:
    seeds = _seeds(runs_dir, encoder)
    if not seeds:
      continue
    entry = {"seeds": {str(seed): metrics for seed, metrics in seeds.items()},
             "median": {key: statistics.median(m[key] for m in seeds.values())
                        for key in ("exact_match", "f1")}}
    if encoder != "random_init":
      base = _seeds(runs_dir, "random_init")
      paired = sorted(set(seeds) & set(base))
      entry["minus_random_init_f1"] = {
          str(seed): seeds[seed]["f1"] - base[seed]["f1"] for seed in paired}
    results["encoders"][encoder] = entry
  os.makedirs(output_dir, exist_ok=True)
  with open(os.path.join(output_dir, "results.json"), "w") as output:
    json.dump(results, output, indent=2, sort_keys=True)
  rows = ["| encoder | seeds | EM median | F1 median | F1 per seed | "
          "F1 minus random init, per seed |", "|---|---|---|---|---|---|"]
  for encoder, entry in results["encoders"].items():
    per_seed = ", ".join(f"{m['f1']:.1f}" for _, m in
                         sorted(entry["seeds"].items()))
    differences = ", ".join(f"{value:+.1f}" for _, value in sorted(
        entry.get("minus_random_init_f1", {}).items())) or "-"
    rows.append(f"| {encoder} | {len(entry['seeds'])} | "
                f"{entry['median']['exact_match']:.1f} | "
                f"{entry['median']['f1']:.1f} | {per_seed} | {differences} |")
  with open(os.path.join(output_dir, "results.md"), "w") as output:
    output.write("\n".join(rows) + "\n")
  print("\n".join(rows))


if __name__ == "__main__":
  main(*sys.argv[1:])
