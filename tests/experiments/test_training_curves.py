"""The training-curves figure and the metrics log it reads."""

import json

from official_electra.experiments import training_curves


def _write_log(model_dir, records):
  model_dir.mkdir(parents=True, exist_ok=True)
  (model_dir / "train_metrics.jsonl").write_text(
      "".join(json.dumps(record) + "\n" for record in records))


def test_a_resumed_runs_repeated_steps_count_once_with_the_latest_values(
    tmp_path):
  _write_log(tmp_path, [{"step": 10, "loss": 3.0}, {"step": 20, "loss": 2.0},
                        {"step": 20, "loss": 1.5}, {"step": 30, "loss": 1.0}])
  records = training_curves.read_metrics_log(tmp_path)
  assert [(record["step"], record["loss"]) for record in records] == [
      (10, 3.0), (20, 1.5), (30, 1.0)]


def test_the_figure_has_a_panel_per_logged_metric(tmp_path):
  electra = [{"step": step, "loss": 30.0 - step / 10,
              "masked_lm_accuracy": step / 1000, "disc_auc": 0.5 + step / 1000}
             for step in range(10, 200, 10)]
  mlm = [{"step": step, "loss": 8.0 - step / 100,
          "masked_lm_accuracy": step / 1000} for step in range(10, 200, 10)]
  _write_log(tmp_path / "electra", electra)
  _write_log(tmp_path / "mlm", mlm)
  path = training_curves.write_training_curves(tmp_path / "electra")
  assert path == str(tmp_path / "electra" / training_curves.FIGURE_FILE)
  electra_png = (tmp_path / "electra" / training_curves.FIGURE_FILE).read_bytes()
  mlm_png = training_curves.plot_training_curves(mlm, "mlm")
  assert electra_png.startswith(b"\x89PNG") and mlm_png.startswith(b"\x89PNG")
  # Three panels are wider than two (the width is 4 inches per panel).
  assert _png_width(electra_png) == 1200 and _png_width(mlm_png) == 800
  assert not list((tmp_path / "electra").glob("*.tmp"))


def _png_width(png):
  return int.from_bytes(png[16:20], "big")
