"""Tests of dataset_info.json: round trip and the mismatch errors."""

import pytest

from official_electra.data import dataset_info as dataset_info_lib


def _info(**overrides):
  fields = dict(
      vocab_sha256="ab" * 32, vocab_size=30522, lower_case=True,
      max_seq_length=128, special_token_ids={"[PAD]": 0}, seed=0,
      shard_files=["s-0", "s-1"], shard_sizes=[10, 20], num_documents=3,
      num_tokens=400, num_truncated_tokens=7, num_examples=4)
  fields.update(overrides)
  return dataset_info_lib.DatasetInfo(**fields)


def test_round_trip(tmp_path):
  info = _info()
  path = info.write(str(tmp_path))
  assert path.endswith("dataset_info.json")
  assert dataset_info_lib.read_dataset_info(str(tmp_path)) == info
  assert info.num_shards == 2
  assert dataset_info_lib.read_dataset_info(str(tmp_path / "none")) is None


def test_mismatches_name_the_file_and_the_fix(tmp_path):
  info = _info()
  info.check_compatible("x/dataset_info.json", 30522, 128)
  info.check_compatible("x/dataset_info.json", None, 128)
  with pytest.raises(dataset_info_lib.DatasetInfoError,
                     match=r"x/dataset_info.json.*30522 tokens.*vocab_size=100"):
    info.check_compatible("x/dataset_info.json", 100, 128)
  with pytest.raises(dataset_info_lib.DatasetInfoError,
                     match="--max_seq_length=512"):
    info.check_compatible("x/dataset_info.json", 30522, 512)


def test_unreadable_file_is_a_clear_error(tmp_path):
  (tmp_path / "dataset_info.json").write_text("{not json")
  with pytest.raises(dataset_info_lib.DatasetInfoError, match="not a valid"):
    dataset_info_lib.read_dataset_info(str(tmp_path))
  (tmp_path / "dataset_info.json").write_text('{"format_version": 99}')
  with pytest.raises(dataset_info_lib.DatasetInfoError, match="format_version"):
    dataset_info_lib.read_dataset_info(str(tmp_path))
