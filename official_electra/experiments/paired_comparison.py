"""Paired per-seed comparisons of the study's encoders.

Every encoder of the study is fine-tuned with the same seeds, and a seed fixes
the head's initialisation, the order of the training examples and the
dropout masks, so two encoders' runs with the same seed on the same task are a
pair: their difference removes what the seed alone does to a score. For two
encoders A and B (an objective against random init at each kept fraction,
and every two objectives at the same fraction, which the study's plan puts at
the same training FLOPs), the unit of every test and interval is the
fine-tuning seed (`seed_statistics`: the tasks of one seed share the same
two pretrained encoders, so (task, seed) pairs are not independent):

- per task: each seed's difference on the task, their mean, a Student
  t-interval and a percentile bootstrap over the seeds, wins, losses and
  ties over the seeds and a two-sided exact sign test of them;
- overall: the same statistics of `d_s`, the mean over tasks of A's score
  minus B's with seed `s` (only seeds that both have on every task), and
  the mean of `d_s` with each task left out in turn (whether one task
  carries the result).

An arm may have several pretraining runs (a replicate, from another record):
its score on a seed is then the mean over its runs, and the t-interval takes
the spread between the runs in (`seed_statistics.two_level_interval`); the
sign test and the bootstrap are over seeds and cannot see it.

Scores are on each task's own metric (MCC, accuracy, Spearman), so the mean
over tasks mixes scales exactly as the study's headline mean does, and its
tables say so.
"""

import itertools
import statistics

from official_electra.experiments import seed_statistics

RANDOM_INIT = "random_init"


def _arm(run):
  """`(variant, fraction of the budget)`: the study's `budget_fraction`
  (the fraction its settings name, equal across variants), else `fraction`."""
  return (run["variant"],
          round(run.get("budget_fraction", run["fraction"]), 6))


def score_arms(runs):
  """`{(variant, fraction): {(task, seed): score}}`."""
  arms = {}
  for run in runs:
    if run["score"] is not None:
      arms.setdefault(_arm(run), {})[(run["task"], run["seed"])] = run["score"]
  return arms


def _paired_seeds(arm_runs, task_names):
  """Seeds that every run of every arm has on every task, sorted."""
  all_runs = [scores for runs in arm_runs for scores in runs]
  seeds = set.intersection(*({seed for _, seed in scores}
                             for scores in all_runs))
  return sorted(seed for seed in seeds
                if all((task, seed) in scores for scores in all_runs
                       for task in task_names))


def _run_values(runs, tasks, seeds):
  """Per run, its mean over `tasks` on each seed: `[[value per seed], ...]`."""
  return [[statistics.fmean(scores[(task, seed)] for task in tasks)
           for seed in seeds] for scores in runs]


def _per_seed_differences(a_values, b_values):
  """Per seed, A's mean over its runs minus B's (from `_run_values`)."""
  return [statistics.fmean(column_a) - statistics.fmean(column_b)
          for column_a, column_b in zip(zip(*a_values), zip(*b_values))]


def _statistics(a_values, b_values):
  """The seed-level statistics of A - B from each arm's `_run_values`."""
  per_seed = _per_seed_differences(a_values, b_values)
  two_level = seed_statistics.two_level_interval(
      per_seed, [[statistics.fmean(run) for run in values]
                 for values in (a_values, b_values)])
  wins, losses, ties = seed_statistics.wins_losses_ties(per_seed)
  return {"per_seed_mean_difference": per_seed,
          "mean_difference": statistics.fmean(per_seed),
          "t_95": two_level["interval"],
          "t_degrees_of_freedom": two_level["degrees_of_freedom"],
          "bootstrap_95": list(seed_statistics.bootstrap_interval(per_seed)),
          "bootstrap_distinct_resamples":
              seed_statistics.distinct_resamples(len(per_seed)),
          "wins": wins, "losses": losses, "ties": ties,
          "sign_test_p": seed_statistics.sign_test_p_value(wins, losses)}


def compare(a_runs, b_runs, task_names):
  """The paired comparison of two arms, each a list of its pretraining runs'
  `{(task, seed): score}` (one run for an arm of a single record); None
  when they share no seed scored on every task by every run.

  Returns:
    The overall statistics (see `_statistics`: `per_seed_mean_difference`,
    `mean_difference`, `t_95`, `t_degrees_of_freedom`, `bootstrap_95`,
    `bootstrap_distinct_resamples`, `wins`, `losses`, `ties` and
    `sign_test_p`, all over the seeds), with `unit`, `seeds`,
    `pretraining_runs` ([A's, B's]), `mean_difference_without` (`{task: the
    mean over the other tasks}`) and `tasks` (`{task: the same statistics of
    the task alone}`).
  """
  seeds = _paired_seeds([a_runs, b_runs], task_names)
  if not seeds:
    return None

  def over(tasks):
    return _statistics(_run_values(a_runs, tasks, seeds),
                       _run_values(b_runs, tasks, seeds))

  result = {"unit": "fine-tuning seed", "seeds": seeds,
            "pretraining_runs": [len(a_runs), len(b_runs)],
            **over(task_names)}
  result["tasks"] = {task: over([task]) for task in task_names}
  result["mean_difference_without"] = {
      task: _mean_difference(
          a_runs, b_runs, [other for other in task_names if other != task],
          seeds)
      for task in task_names} if len(task_names) > 1 else {}
  return result


def _mean_difference(a_runs, b_runs, tasks, seeds):
  """The mean over seeds of A - B on the mean over `tasks`."""
  a_values, b_values = (_run_values(runs, tasks, seeds)
                        for runs in (a_runs, b_runs))
  return statistics.fmean(_per_seed_differences(a_values, b_values))


def paired_comparisons(runs, task_names):
  """Every objective against random init, and every two objectives at the
  same fraction of the budget; a list of rows (see the module docstring)."""
  arms = score_arms(runs)
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
    result = compare([arms[a]], [arms[b]], task_names)
    if result is None:
      continue
    rows.append({"a": a[0], "a_step": steps[a], "b": b[0],
                 "b_step": steps[b], "fraction": a[1],
                 "train_flops": flops[a], **result})
  return rows


def _percent(value):
  return f"{100 * value:+.1f}"


def format_interval(interval):
  """`[+a, +b]` x 100, or - for none."""
  return "-" if interval is None else (f"[{_percent(interval[0])}, "
                                       f"{_percent(interval[1])}]")


def _t_cell(statistics_):
  if statistics_["t_95"] is None:
    return "-"
  return (f"{format_interval(statistics_['t_95'])} "
          f"(df {statistics_['t_degrees_of_freedom']:.1f})")


def _counts_cell(statistics_):
  return (f"{statistics_['wins']}/{statistics_['losses']}/"
          f"{statistics_['ties']}")


def pair_label(row):
  """`A (step N) - B (step M)` (random init, at step 0, without one)."""
  def name(arm, step):
    return f"{arm} (step {step})" if step else arm
  return f"{name(row['a'], row['a_step'])} - {name(row['b'], row['b_step'])}"


def mixed_mean_title(task_names, metric_names=None):
  """What a mean over these tasks averages, named in a table's header."""
  if not metric_names:
    return "mean over tasks (each task's own metric, mixed)"
  names = list(dict.fromkeys(metric_names.get(task, "?")
                             for task in task_names))
  if len(names) == 1:
    return f"mean over tasks ({names[0]})"
  return f"mean over tasks (mixes {', '.join(names)})"


def format_task_table(rows, task_names, metric_names=None):
  """Each pair's statistics per task, over the seeds (x 100)."""
  metric_names = metric_names or {}
  header = ["A - B", "task", "seeds", "mean paired diff", "95% t-interval",
            "95% bootstrap", "wins/losses/ties (seeds)", "sign test p"]
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for row in rows:
    for task in task_names:
      task_row = row["tasks"][task]
      metric = metric_names.get(task)
      lines.append("| " + " | ".join([
          pair_label(row), task + (f" ({metric})" if metric else ""),
          str(len(row["seeds"])), _percent(task_row["mean_difference"]),
          _t_cell(task_row), format_interval(task_row["bootstrap_95"]),
          _counts_cell(task_row), f"{task_row['sign_test_p']:.3g}"]) + " |")
  return "\n".join(lines)


def format_overall_table(rows, task_names, metric_names=None):
  """Each pair's statistics of the mean over tasks, over the seeds (x 100)."""
  header = ["A - B", "fraction", "train FLOPs (A)", "seeds",
            "pretraining runs (A, B)",
            mixed_mean_title(task_names, metric_names) + ", paired diff",
            "95% t-interval", "95% bootstrap", "wins/losses/ties (seeds)",
            "sign test p"]
  if len(task_names) > 1:
    header.append("mean with one task left out")
  lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for row in rows:
    cells = [pair_label(row), f"{row['fraction']:.3g}",
             f"{row['train_flops']:.3g}", str(len(row["seeds"])),
             ", ".join(map(str, row["pretraining_runs"])),
             _percent(row["mean_difference"]), _t_cell(row),
             format_interval(row["bootstrap_95"]), _counts_cell(row),
             f"{row['sign_test_p']:.3g}"]
    if len(task_names) > 1:
      cells.append(", ".join(
          f"no {task} {_percent(row['mean_difference_without'][task])}"
          for task in task_names))
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def format_table(rows, task_names, metric_names=None):
  """The comparisons as markdown (differences x 100): per task first, then
  the mean over tasks, each over the fine-tuning seeds."""
  if not rows:
    return "No paired comparisons (no seed scored on every task by both)."
  resamples = sorted({row["bootstrap_distinct_resamples"] for row in rows})
  seeds = sorted({len(row["seeds"]) for row in rows})
  notes = (
      "The unit is the fine-tuning seed: every interval and test is over the "
      f"seeds ({'/'.join(map(str, seeds))} here), not over (task, seed) "
      "pairs, which share their two encoders. t: Student t-interval (df: its "
      "degrees of freedom; with two or more pretraining runs in an arm it "
      "takes their spread in, Welch-Satterthwaite df). Bootstrap: "
      "percentile, seeds resampled, "
      f"{'/'.join(map(str, resamples))} distinct resamples, so it is "
      "narrower than the t-interval with few seeds; it sees the seeds only. "
      "Wins/losses/ties and the exact two-sided sign test are over the "
      "seeds. An arm with one pretraining run: its draw is in no interval.")
  return "\n".join([
      "Paired differences per task (the same fine-tuning seed on the same "
      "task; x 100):", "", format_task_table(rows, task_names, metric_names),
      "", "Paired differences of the mean over tasks (x 100, mean over tasks "
      "of each seed's difference; the tasks' metrics mixed):", "",
      format_overall_table(rows, task_names, metric_names), "", notes])
