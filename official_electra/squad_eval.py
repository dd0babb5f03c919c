"""Scores SQuAD predictions as the official v1.1 and v2.0 scripts do.

    python -m official_electra.squad_eval dev-v1.1.json predictions.json
    python -m official_electra.squad_eval dev-v2.0.json predictions.json \
      --na_prob_file=squad_null_odds.json [--na_prob_thresh=-2.75]

The version comes from the data file ("version" 2.x, or any `is_impossible`
question, is SQuAD 2.0). Prints one JSON object with the official script's
keys: `exact_match` and `f1` for 1.1; `exact`, `f1`, `total`, `HasAns_*`,
`NoAns_*` for 2.0, and with `--na_prob_file` `best_exact`, `best_f1` and their
thresholds. `--na_prob_thresh` (default 1.0, the official script's; ELECTRA
uses -2.75 on its null logits): a 2.0 question whose null odds exceed it is
scored as answered "". The rules: official_electra/finetuning/squad_metrics.py.
"""

import json

from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra.finetuning import squad_metrics

_USAGE = ("usage: python -m official_electra.squad_eval DATA_FILE "
          "PREDICTIONS_FILE [--na_prob_file=F] [--na_prob_thresh=T]")

flags.DEFINE_string("na_prob_file", None, "SQuAD 2.0: JSON object of "
                    "question id -> null odds (adds best_exact, best_f1 and "
                    "their thresholds).")
flags.DEFINE_float("na_prob_thresh", 1.0, "SQuAD 2.0: a question whose null "
                   "odds exceed this is scored as answered \"\".")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


def main(argv):
  try:
    if len(argv) != 3:
      raise squad_metrics.SquadEvalError(
          f"expected 2 arguments (DATA_FILE PREDICTIONS_FILE), got "
          f"{len(argv) - 1}; {_USAGE}")
    results = squad_metrics.evaluate_file(
        argv[1], argv[2], flags.FLAGS.na_prob_file,
        flags.FLAGS.na_prob_thresh)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)
  print(json.dumps(results))


if __name__ == "__main__":
  app.run(main)
