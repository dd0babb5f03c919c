"""Tests and intervals over the study's independent unit, the fine-tuning seed.

Every encoder of the study is fine-tuned with the same seeds, and the seeds
are the only thing drawn independently: the tasks of one seed share the same
two pretrained encoders, so the (task, seed) pairs of a comparison are not
independent draws, and a test over them counts one encoder's habits once per
seed. Here every quantity is over the seeds:

- `sign_test_p_value`: the two-sided exact sign test of wins against losses.
- `t_interval`: the Student t-interval of a mean over seeds, with
  `student_t_quantile` computed here (SciPy is not a runtime dependency).
- `bootstrap_interval`: the percentile bootstrap of the same mean, with
  `distinct_resamples` saying how few different resamples `n` seeds allow
  (126 for 5), which is why it comes out narrower than the t-interval.
- `two_level_interval`: the t-interval when an arm has two or more
  pretraining runs (see its docstring for why the runs are a level of their
  own rather than more seeds).
"""

import math
import random
import statistics

BOOTSTRAP_SAMPLES = 10000
_BOOTSTRAP_SEED = 0
_BETA_TOLERANCE = 1e-15
_BETA_MAX_TERMS = 1000


def sign_test_p_value(wins, losses):
  """Two-sided exact binomial p-value of `wins` against `losses` (p = 1/2);
  ties are left out by the caller, as the sign test does."""
  n = wins + losses
  if n == 0:
    return 1.0
  tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2 ** n
  return min(1.0, 2 * tail)


def wins_losses_ties(differences):
  """`(wins, losses, ties)`: differences above, below and at 0."""
  wins = sum(difference > 0 for difference in differences)
  losses = sum(difference < 0 for difference in differences)
  return wins, losses, len(differences) - wins - losses


def distinct_resamples(n):
  """How many different resamples (multisets) of `n` values drawn with
  replacement there are: C(2n - 1, n); 126 for 5 seeds."""
  return math.comb(2 * n - 1, n) if n else 0


def bootstrap_interval(values, samples=BOOTSTRAP_SAMPLES, level=0.95,
                       seed=_BOOTSTRAP_SEED):
  """Percentile bootstrap interval of the mean of `values` (a list of floats).

  The resamples come from a fixed random stream, so a report is
  reproducible. With few values the interval is narrow for want of
  resamples (`distinct_resamples`), not for want of spread. A single value
  has no spread to resample: its interval is the value itself.

  Raises:
    ValueError: no values.
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


def _beta_continued_fraction(a, b, x):
  """The continued fraction of the regularized incomplete beta function,
  evaluated by the modified Lentz method (converges for x < (a+1)/(a+b+2))."""
  tiny = 1e-300
  product, numerator_part, denominator_part = 1.0, 1.0, 0.0
  for term in range(_BETA_MAX_TERMS):
    m = term // 2
    if term == 0:
      coefficient = 1.0
    elif term % 2:
      coefficient = -((a + m) * (a + b + m) * x) / ((a + 2 * m) *
                                                    (a + 2 * m + 1))
    else:
      coefficient = (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m))
    denominator_part = 1.0 + coefficient * denominator_part
    denominator_part = 1.0 / (denominator_part if abs(denominator_part) > tiny
                              else tiny)
    numerator_part = 1.0 + coefficient / numerator_part
    numerator_part = numerator_part if abs(numerator_part) > tiny else tiny
    step = numerator_part * denominator_part
    product *= step
    if abs(1.0 - step) < _BETA_TOLERANCE:
      return product - 1.0
  raise ArithmeticError(f"incomplete beta({a}, {b}, {x}) did not converge")


def regularized_incomplete_beta(a, b, x):
  """I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
  if x <= 0.0:
    return 0.0
  if x >= 1.0:
    return 1.0
  if x > (a + 1) / (a + b + 2):
    # The fraction converges fast only below its mean; use the symmetry.
    return 1.0 - regularized_incomplete_beta(b, a, 1.0 - x)
  log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
               + a * math.log(x) + b * math.log1p(-x))
  return math.exp(log_front) / a * _beta_continued_fraction(a, b, x)


def student_t_cdf(t, df):
  """P(T <= t) for Student's t with `df` (> 0, not necessarily whole)
  degrees of freedom."""
  tail = 0.5 * regularized_incomplete_beta(df / 2, 0.5, df / (df + t * t))
  return 1.0 - tail if t > 0 else tail


def student_t_quantile(probability, df):
  """The t with `student_t_cdf(t, df) == probability`, by bisection (the
  CDF is monotone); 12.706 for 0.975 and 1 degree of freedom.

  Raises:
    ValueError: `probability` outside (0, 1) or `df` not positive.
  """
  if not 0.0 < probability < 1.0:
    raise ValueError(f"probability must be in (0, 1), got {probability}")
  if not df > 0:
    raise ValueError(f"degrees of freedom must be positive, got {df}")
  if probability < 0.5:
    return -student_t_quantile(1.0 - probability, df)
  low, high = 0.0, 1.0
  while student_t_cdf(high, df) < probability:
    low, high = high, 2 * high
  for _ in range(200):
    middle = (low + high) / 2
    if middle in (low, high):
      break
    if student_t_cdf(middle, df) < probability:
      low = middle
    else:
      high = middle
  return (low + high) / 2


def _interval(mean, variance, df, level):
  if variance == 0.0:
    return [mean, mean]
  half_width = student_t_quantile(0.5 + level / 2, df) * math.sqrt(variance)
  return [mean - half_width, mean + half_width]


def t_interval(values, level=0.95):
  """The Student t-interval `[low, high]` of the mean of `values` (n - 1
  degrees of freedom); None for fewer than two values."""
  if len(values) < 2:
    return None
  variance = statistics.variance(values) / len(values)
  return _interval(statistics.fmean(values), variance, len(values) - 1, level)


def two_level_interval(per_seed_differences, run_means_by_arm, level=0.95):
  """The t-interval of a paired difference whose arms may have several
  pretraining runs.

  Each arm's score on a seed is the mean over its runs; `d_s`, the
  difference of the two arms on seed `s`, is `per_seed_differences`. A
  pretraining run's draw moves every seed of that run the same way, so it
  is a level of its own: averaging the runs per seed and taking the spread
  over seeds (treating the (run, seed) pairs as units pooled per seed) hides
  it, since a shift common to every seed does not show in their spread, and
  the interval would be as narrow as with one run. So the variance of the
  mean difference is taken as the sum of

  - the seed level: `var(d_s) / n`, with n - 1 degrees of freedom;
  - per arm with R >= 2 runs, the run level: `var(run means) / R`, with
    R - 1 degrees of freedom, where a run's mean is over the paired seeds
    (the seed effects the runs share cancel in their spread);

  and the t quantile takes the Welch-Satterthwaite degrees of freedom of
  that sum. A run's mean still carries the seeds' noise divided by n, which
  the seed level counts too: the variance errs on the large side (a crossed
  two-way analysis would subtract the interaction, and can then come out
  negative with two runs). Two runs measure their spread with one degree of
  freedom, though, and when that spread dominates the Satterthwaite degrees
  of freedom make the interval short of its level: in simulation (5 seeds,
  two runs whose draw has 1, 2 and 5 times the seeds' spread) a 95% interval
  covered 95%, 92% and 88% of the time, where the interval over the seeds
  alone covered 85%, 64% and 31%. An arm with one run adds nothing: its
  draw cannot be measured, and the interval says only what the seeds say.
  With one run in each arm this is `t_interval(per_seed_differences)`.

  Args:
    per_seed_differences: `d_s`, one per paired seed.
    run_means_by_arm: for each arm, its runs' means over the paired seeds
      (one value per run).
    level: the interval's coverage.

  Returns:
    `{"interval": [low, high] or None, "degrees_of_freedom": float or None}`
    (None for fewer than two seeds).
  """
  n = len(per_seed_differences)
  if n < 2:
    return {"interval": None, "degrees_of_freedom": None}
  terms = [(statistics.variance(per_seed_differences) / n, n - 1)]
  terms += [(statistics.variance(means) / len(means), len(means) - 1)
            for means in run_means_by_arm if len(means) >= 2]
  variance = sum(term for term, _ in terms)
  spread = sum(term * term / df for term, df in terms)
  df = variance * variance / spread if spread else float(n - 1)
  return {"interval": _interval(statistics.fmean(per_seed_differences),
                                variance, df, level),
          "degrees_of_freedom": df}
