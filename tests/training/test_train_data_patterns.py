"""`--train_data` as the original README writes it, a glob over the dataset
folder (`'data/*'`), which also matches the build's own files."""

import logging
import shutil

from official_electra.data import pretraining_files
from tests.reliability import cli
from tests.training import tiny_pretraining


def test_a_glob_over_the_dataset_folder_trains(tmp_path, pretraining_data,
                                               caplog, monkeypatch):
  data_dir, vocab_file, vocab_size = pretraining_data
  # The skip is logged once per process: another test of this process may
  # have resolved the same (session-wide) data folder already.
  monkeypatch.setattr(pretraining_files, "_reported_side_files", set())
  # absl's logger has its own level (a program run in-process may have
  # lowered its verbosity), so it is the one set here.
  with caplog.at_level(logging.INFO, logger="absl"):
    result = tiny_pretraining.train(
        tmp_path / "run", (data_dir / "*", vocab_file, vocab_size),
        num_train_steps=2)
  assert result["step"] == 2
  skipped = [record.getMessage() for record in caplog.records
             if record.getMessage().startswith("skipping ")]
  assert len(skipped) == 1, skipped
  assert "token_counts.txt" in skipped[0]


def test_a_file_that_is_not_a_record_is_one_error_line(tmp_path,
                                                       pretraining_data):
  data_dir, vocab_file, vocab_size = pretraining_data
  data_copy = shutil.copytree(data_dir, tmp_path / "data")
  (data_copy / "README.txt").write_text("Built from the docstrings.\n")
  seq_length = tiny_pretraining.SEQ_LENGTH
  completed = cli.run(
      "official_electra.train", "--gin_file=gin/tiny.gin",
      f"--gin_bindings=encoder.vocab_size={vocab_size}",
      f"--gin_bindings=encoder.max_position_embeddings={seq_length}",
      f"--gin_bindings=run_pretraining.max_seq_length={seq_length}",
      f"--train_data={data_copy / '*'}", f"--vocab_file={vocab_file}",
      f"--model_dir={tmp_path / 'run'}", "--noprogress_bar")
  cli.assert_error(completed, f"{data_copy / 'README.txt'} is not a TFRecord",
                   "narrow the pattern")
  assert not (tmp_path / "run").exists()
