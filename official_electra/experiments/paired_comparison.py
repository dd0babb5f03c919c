"""Paired per-seed comparisons of the study's encoders.

Every encoder of the study is fine-tuned with the same seeds, and a seed fixes
the head's initialisation, the order of the training examples and the
dropout masks, so two encoders' runs with the same seed on the same task are a
pair: their difference removes what the seed alone does to a score. For two
encoders A and B (an objective against random init at each kept fraction,
and every two objectives at the same fraction, which the study's plan puts at
the same training FLOPs):

- `d_s`, the mean over tasks of A's score minus B's with seed `s` (only
  seeds that both have on every task);
- the mean of `d_s` and its 95% bootstrap interval (seeds resampled with
  replacement, a fixed random stream, so a report is reproducible);
- a two-sided exact sign test over every (task, seed) pair: wins, losses and
  ties (ties are left out of the test, as the sign test does);
- per task, the mean paired difference and its wins and losses.

Scores are on each task's own metric (MCC, accuracy, Spearman), so the mean
over tasks mixes scales exactly as the study's headline mean does.
"""

import itertools
import math
import random
import statistics

RANDOM_INIT = "random_init"
BOOTSTRAP_SAMPLES = 10000
_BOOTSTRAP_SEED = 0


def sign_test_p_value(wins, losses):
  """Two-sided exact binomial p-value of `wins` against `losses` (p = 1/2)."""
  n = wins + losses
  if n == 0:
    return 1.0
  tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2 ** n
  return min(1.0, 2 * tail)


def bootstrap_interval(values, samples=BOOTSTRAP_SAMPLES, level=0.95,
                       seed=_BOOTSTRAP_SEED):
  """Percentile bootstrap interval of the mean of `values` (a list of floats).

  A single value has no spread to resample: its interval is the value itself.
  """
  if not values:
    raise ValueError("no values to bootstrap")
  rng = random.Random(seed)
  n = len(values)
  means = sorted(statistics.fmean(rng.choices(values, k=n))
                 for _ in range(samples))
  tail = (1 - level) / 2
  return (means[int(math.floor(tail * (samples - 1)))],
          means[int(math.ceil((1 - tail) * (samples - 1)))])


def _arm(run):
  """`(variant, fraction of the budget)`: the study's `budget_fraction`
  (the fraction its settings name, equal across variants), else `fraction`."""
  return (run["variant"],
          round(run.get("budget_fraction", run["fraction"]), 6))


def _arms(runs):
  """`{(variant, fraction): {(task, seed): score}}`."""
  arms = {}
  for run in runs:
    if run["score"] is not None:
      arms.setdefault(_arm(run), {})[(run["task"], run["seed"])] = run["score"]
  return arms


def compare(a_scores, b_scores, task_names):
  """The paired comparison of two arms' `{(task, seed): score}`; None when
  they share no seed scored on every task."""
  seeds = sorted({seed for _, seed in a_scores} & {seed for _, seed in b_scores})
  seeds = [seed for seed in seeds
           if all((task, seed) in a_scores and (task, seed) in b_scores
                  for task in task_names)]
  if not seeds:
    return None
  per_seed = [statistics.fmean(a_scores[(task, seed)] - b_scores[(task, seed)]
                               for task in task_names) for seed in seeds]
  differences = [a_scores[(task, seed)] - b_scores[(task, seed)]
                 for task in task_names for seed in seeds]
  wins = sum(d > 0 for d in differences)
  losses = sum(d < 0 for d in differences)
  low, high = bootstrap_interval(per_seed)
  tasks = {}
  for task in task_names:
    task_differences = [a_scores[(task, seed)] - b_scores[(task, seed)]
                        for seed in seeds]
    tasks[task] = {"mean_difference": statistics.fmean(task_differences),
                   "wins": sum(d > 0 for d in task_differences),
                   "losses": sum(d < 0 for d in task_differences)}
  return {"seeds": seeds, "per_seed_mean_difference": per_seed,
          "mean_difference": statistics.fmean(per_seed),
          "bootstrap_95": [low, high],
          "wins": wins, "losses": losses,
          "ties": len(differences) - wins - losses,
          "sign_test_p": sign_test_p_value(wins, losses),
          "tasks": tasks}


def paired_comparisons(runs, task_names):
  """Every objective against random init, and every two objectives at the
  same fraction of the budget; a list of rows (see the module docstring)."""
  arms = _arms(runs)
  variants = []
  for run in runs:
    if run["variant"] != RANDOM_INIT and run["variant"] not in variants:
      variants.append(run["variant"])
  fractions = sorted({fraction for variant, fraction in arms
                      if variant != RANDOM_INIT}, reverse=True)
  steps = {_arm(run): run["step"] for run in runs}
  flops = {_arm(run): run["train_flops"] for run in runs}
  rows = []
  pairs = []
  for fraction in fractions:
    present = [variant for variant in variants if (variant, fraction) in arms]
    pairs += [((variant, fraction), (RANDOM_INIT, 0.0)) for variant in present]
    pairs += [((a, fraction), (b, fraction))
              for a, b in itertools.combinations(present, 2)]
  for a, b in pairs:
    if b not in arms:
      continue
    result = compare(arms[a], arms[b], task_names)
    if result is None:
      continue
    rows.append({"a": a[0], "a_step": steps[a], "b": b[0],
                 "b_step": steps[b], "fraction": a[1],
                 "train_flops": flops[a], **result})
  return rows


def format_table(rows, task_names):
  """The comparisons as a markdown table (differences x 100)."""
  header = (["A - B", "fraction", "train FLOPs (A)", "seeds",
             "mean paired diff [95% bootstrap]", "wins/losses/ties",
             "sign test p"] + [f"{task} diff" for task in task_names])
  lines = ["Paired differences (the same fine-tuning seed on the same task; "
           "x 100, mean over tasks of each seed's difference):", "",
           "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for row in rows:
    low, high = row["bootstrap_95"]
    cells = [f"{row['a']} (step {row['a_step']}) - {row['b']}"
             + ("" if row["b"] == RANDOM_INIT else f" (step {row['b_step']})"),
             f"{row['fraction']:.3g}", f"{row['train_flops']:.3g}",
             str(len(row["seeds"])),
             f"{100 * row['mean_difference']:+.1f} "
             f"[{100 * low:+.1f}, {100 * high:+.1f}]",
             f"{row['wins']}/{row['losses']}/{row['ties']}",
             f"{row['sign_test_p']:.3g}"]
    cells += [f"{100 * row['tasks'][task]['mean_difference']:+.1f}"
              for task in task_names]
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)
