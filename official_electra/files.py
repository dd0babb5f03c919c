"""File operations on any TensorFlow filesystem (local, `gs://`, `ram://`, ...).

Every read and write of the data tool, pretraining, fine-tuning, conversion
and export goes through `tf.io.gfile`, so a corpus, model_dir or export
folder on Cloud Storage (what TPU users must use) works like a local one.
Whole files are written to a temporary name and renamed, so a run that dies
never leaves a half-written file under the real name.

Local paths keep what only a local filesystem has: `**` globs and atomic
folder renames.
"""

import errno
import glob as _glob
import json
import math
import os
import tempfile

import tensorflow as tf

TEMPORARY_SUFFIX = ".tmp"


def is_local(path: str) -> bool:
  """Whether `path` is on the local filesystem (no `scheme://` prefix)."""
  return "://" not in path


def absolute(path: str) -> str:
  """`path` made absolute when local; a URL is returned as it is."""
  return os.path.abspath(path) if is_local(path) else path


def exists(path: str) -> bool:
  return tf.io.gfile.exists(path)


def isdir(path: str) -> bool:
  return tf.io.gfile.isdir(path)


def isfile(path: str) -> bool:
  return tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)


def size(path: str) -> int:
  return tf.io.gfile.stat(path).length


def makedirs(path: str) -> None:
  tf.io.gfile.makedirs(path)


def listdir(path: str) -> list[str]:
  """The names in folder `path` (without a trailing `/` for sub-folders)."""
  return [name.rstrip("/") for name in tf.io.gfile.listdir(path)]


def glob(pattern: str) -> list[str]:
  """Sorted paths matching `pattern`; `**` matches folders when local."""
  if is_local(pattern):
    return sorted(_glob.glob(pattern, recursive=True))
  return sorted(tf.io.gfile.glob(pattern))


def remove(path: str) -> None:
  """Deletes file `path` if it exists."""
  if tf.io.gfile.exists(path):
    tf.io.gfile.remove(path)


def remove_tree(path: str) -> None:
  """Deletes folder `path` and everything under it, if it exists."""
  if tf.io.gfile.exists(path):
    tf.io.gfile.rmtree(path)


def open_file(path: str, mode: str = "r"):
  """A `tf.io.gfile.GFile`: text in modes "r"/"w"/"a", bytes with "b"."""
  return tf.io.gfile.GFile(path, mode)


_REASONS = {
    tf.errors.NotFoundError: (errno.ENOENT, "No such file or directory"),
    tf.errors.PermissionDeniedError: (errno.EACCES, "Permission denied"),
}


def os_error(error: tf.errors.OpError, path: str) -> OSError:
  """TensorFlow's error for `path` as the OSError Python's `open` raises.

  Its `strerror` is the reason alone ("No such file or directory"), as for a
  local file, so messages read the same on every filesystem.
  """
  number, reason = _REASONS.get(type(error), (errno.EIO, None))
  message = error.message.rpartition("; ")[2].strip() if error.message else ""
  return OSError(number, message or reason or type(error).__name__, path)


def read_bytes(path: str) -> bytes:
  """The contents of file `path`.

  Raises:
    OSError: it is missing or unreadable (on any filesystem).
  """
  try:
    with tf.io.gfile.GFile(path, "rb") as input_file:
      return input_file.read()
  except tf.errors.OpError as error:
    raise os_error(error, path) from None


def read_text(path: str) -> str:
  """The UTF-8 text of file `path`; raises OSError as `read_bytes` does."""
  return read_bytes(path).decode("utf-8")


def write_bytes(path: str, data: bytes) -> None:
  """Writes `data` to `path` through a temporary file and a rename."""
  tf.io.gfile.makedirs(os.path.dirname(path) or ".")
  temporary_path = path + TEMPORARY_SUFFIX
  with tf.io.gfile.GFile(temporary_path, "wb") as output_file:
    output_file.write(data)
  tf.io.gfile.rename(temporary_path, path, overwrite=True)


def write_text(path: str, text: str) -> None:
  """Writes `text` as UTF-8 to `path` through a temporary file and a rename."""
  write_bytes(path, text.encode("utf-8"))


def _nan_to_none(value):
  """Standard JSON has no NaN (e.g. a correlation of constant predictions)."""
  if isinstance(value, float) and math.isnan(value):
    return None
  if isinstance(value, dict):
    return {key: _nan_to_none(item) for key, item in value.items()}
  if isinstance(value, (list, tuple)):
    return [_nan_to_none(item) for item in value]
  return value


def write_json(path: str, value) -> None:
  """Writes `value` as indented, key-sorted JSON, atomically; NaN -> null."""
  write_text(path, json.dumps(_nan_to_none(value), indent=2, sort_keys=True,
                              allow_nan=False) + "\n")


def read_json(path: str):
  """The JSON value in file `path`; raises OSError as `read_bytes` does."""
  return json.loads(read_bytes(path))


def copy(source: str, destination: str) -> None:
  """Copies a file through a temporary name (any filesystem to any)."""
  tf.io.gfile.makedirs(os.path.dirname(destination) or ".")
  temporary_path = destination + TEMPORARY_SUFFIX
  tf.io.gfile.copy(source, temporary_path, overwrite=True)
  tf.io.gfile.rename(temporary_path, destination, overwrite=True)


def move(source: str, destination: str) -> None:
  """Renames file `source` to `destination`, replacing it.

  How a file that a library wrote under a temporary name (`<destination>` +
  `TEMPORARY_SUFFIX`, on the same filesystem) takes its real name. Atomic
  locally; object stores (`gs://`) copy and delete.

  Raises:
    OSError: `source` is missing or the rename fails (on any filesystem).
  """
  try:
    tf.io.gfile.rename(source, destination, overwrite=True)
  except tf.errors.OpError as error:
    raise os_error(error, source) from None


def copy_if_absent(source: str, destination: str) -> None:
  if not tf.io.gfile.exists(destination):
    copy(source, destination)


def _files_under(folder: str) -> list[str]:
  """Paths relative to `folder` of every file under it, sorted."""
  relative = []
  for directory, _, names in tf.io.gfile.walk(folder):
    prefix = os.path.relpath(directory, folder) if is_local(folder) else (
        directory[len(folder):].strip("/"))
    for name in names:
      relative.append(os.path.normpath(os.path.join(prefix, name))
                      if prefix not in ("", ".") else name)
  return sorted(relative)


def staging_folder(destination: str) -> str:
  """A new, empty folder beside `destination` to build it in, for
  `publish_folder` (locally a unique hidden sibling; elsewhere
  `<destination>.tmp`, emptied)."""
  destination = destination.rstrip("/")
  if is_local(destination):
    parent = os.path.dirname(os.path.abspath(destination))
    os.makedirs(parent, exist_ok=True)
    return tempfile.mkdtemp(prefix=f".{os.path.basename(destination)}-",
                            dir=parent)
  staging = destination + TEMPORARY_SUFFIX
  remove_tree(staging)
  tf.io.gfile.makedirs(staging)
  return staging


def publish_folder(staging: str, destination: str, last: str) -> None:
  """Moves the complete folder `staging` to `destination` (which must not exist).

  Locally this is one atomic rename. Object stores (`gs://`) and `ram://`
  have no folder rename, so there each file is copied and file `last` (the
  one readers check first, e.g. `model_config.json`) is copied after all the
  others: a destination without it is an unfinished one.

  Args:
    staging: a complete folder, removed afterwards.
    destination: the final folder.
    last: a file name relative to `staging`, copied last.
  """
  if is_local(staging) and is_local(destination):
    os.replace(staging, destination)
    return
  names = _files_under(staging)
  for name in sorted(names, key=lambda name: name == last):
    copy(os.path.join(staging, name), os.path.join(destination, name))
  remove_tree(staging)
