"""`files.move`: how a file a library wrote under a temporary name is published."""

import errno
import uuid

import pytest

from official_electra import files


@pytest.fixture(params=["local", "ram"])
def folder(request, tmp_path):
  if request.param == "local":
    yield str(tmp_path)
  else:
    root = f"ram://files-{uuid.uuid4().hex}"
    files.makedirs(root)
    yield root
    files.remove_tree(root)


def test_move_replaces_the_destination_and_leaves_no_source(folder):
  destination = f"{folder}/corpus.txt"
  unfinished = destination + files.TEMPORARY_SUFFIX
  files.write_text(destination, "old")
  files.write_text(unfinished, "new")
  files.move(unfinished, destination)
  assert files.read_text(destination) == "new"
  assert not files.exists(unfinished)
  assert files.listdir(folder) == ["corpus.txt"]


def test_move_of_a_missing_file_is_an_os_error_naming_it(folder):
  missing = f"{folder}/no_such.txt.tmp"
  with pytest.raises(OSError) as raised:
    files.move(missing, f"{folder}/no_such.txt")
  assert raised.value.errno == errno.ENOENT
  assert raised.value.filename == missing
