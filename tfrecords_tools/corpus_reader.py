"""Finds, checks and streams corpus files as document-aligned byte units.

Formats, by file name: `*.jsonl` / `*.json` / `*.ndjson` are JSON Lines (one
document per line, its `text` field); anything else is plain text (one
sentence or paragraph per line, a blank line between documents). Either may be
compressed as `.gz` or `.bz2`.

The main process only cuts the byte stream; workers decode it. A unit ends at
a blank line (plain text) or a line end (JSON Lines) and never spans two files.
A plain-text document longer than four units is cut at a line end (its parts
are packed as separate documents), and a line longer than that at a space. A
JSON Lines document is never cut (its unit holds the whole line).
"""

import bz2
import contextlib
import dataclasses
import gzip
from typing import BinaryIO, Iterator

from official_electra import files as files_lib
from tfrecords_tools.errors import BuildError

PLAIN_TEXT = "text"
JSON_LINES = "jsonl"
_JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
_SNIFF_BYTES = 8192
_READ_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True)
class CorpusFile:
  """A readable, non-empty corpus file and its decompressed size."""
  path: str
  kind: str
  num_bytes: int


@dataclasses.dataclass(frozen=True)
class CorpusUnit:
  """Consecutive whole documents of one file: the unit of parallel work.

  Attributes:
    index: position in the corpus-wide sequence of units.
    path: the file they come from.
    kind: PLAIN_TEXT or JSON_LINES.
    start: offset of the first byte in the concatenated decompressed corpus.
    data: the raw bytes.
  """
  index: int
  path: str
  kind: str
  start: int
  data: bytes


@contextlib.contextmanager
def _open(path: str) -> Iterator[BinaryIO]:
  """The decompressed bytes of `path`, on any TensorFlow filesystem."""
  # Python's own reader locally (faster); tf.io.gfile for gs:// and others.
  with (open(path, "rb") if files_lib.is_local(path)
        else files_lib.open_file(path, "rb")) as raw:
    if path.endswith(".gz"):
      with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
        yield stream
    elif path.endswith(".bz2"):
      with bz2.BZ2File(raw, "rb") as stream:
        yield stream
    else:
      yield raw


def _kind(path: str) -> str:
  name = path.removesuffix(".gz").removesuffix(".bz2")
  return JSON_LINES if name.endswith(_JSON_SUFFIXES) else PLAIN_TEXT


def find_corpus_files(patterns: str) -> list[str]:
  """Files matching comma-separated glob patterns, sorted, each once.

  Raises:
    BuildError: if a pattern matches no file.
  """
  paths = []
  for pattern in (p.strip() for p in patterns.split(",") if p.strip()):
    matches = [p for p in files_lib.glob(pattern) if files_lib.isfile(p)]
    if not matches:
      raise BuildError(f"--input pattern {pattern!r} matches no file: check "
                       "the path and quote the pattern so the shell does not "
                       "expand it")
    paths.extend(matches)
  if not paths:
    raise BuildError("--input is empty: give a glob of text files")
  return list(dict.fromkeys(files_lib.absolute(p) for p in paths))


def _decompressed_size(path: str) -> int:
  if not path.endswith((".gz", ".bz2")):
    return files_lib.size(path)
  total = 0
  with _open(path) as stream:
    while block := stream.read(_READ_BYTES):
      total += len(block)
  return total


def inspect_corpus_files(paths: list[str]
                         ) -> tuple[list[CorpusFile], dict[str, str]]:
  """Sizes the usable files and sets aside empty or binary ones.

  A file is binary when its first 8 KiB (decompressed) hold a NUL byte.

  Returns:
    `(usable files, {skipped path: reason})`.

  Raises:
    BuildError: a file cannot be read or decompressed.
  """
  usable, skipped = [], {}
  for path in paths:
    try:
      with _open(path) as stream:
        head = stream.read(_SNIFF_BYTES)
      num_bytes = _decompressed_size(path) if head else 0
    except (OSError, EOFError, ValueError) as error:
      raise BuildError(f"cannot read {path} ({error}): fix or remove the "
                       "file") from None
    if not head.strip():
      skipped[path] = "empty"
    elif b"\x00" in head:
      skipped[path] = "binary (NUL bytes)"
    else:
      usable.append(CorpusFile(path=path, kind=_kind(path),
                               num_bytes=num_bytes))
  return usable, skipped


def describe_skipped(skipped: dict[str, str], limit: int = 3) -> str:
  """`a.txt is empty, b.bin is binary (NUL bytes) and 4 more`, for messages."""
  parts = [f"{path} is {reason}" for path, reason in
           list(skipped.items())[:limit]]
  if len(skipped) > limit:
    parts.append(f"{len(skipped) - limit} more")
  return ", ".join(parts) or "no files"


def _cut_position(buffer: bytes, kind: str, forced: bool) -> int:
  """Where to end a unit in `buffer`: 0 means read more first."""
  if kind == PLAIN_TEXT:
    blank_line = max(buffer.rfind(b"\n\n"), buffer.rfind(b"\n\r\n"))
    if blank_line >= 0:
      return buffer.index(b"\n", blank_line + 1) + 1
  if kind == JSON_LINES or forced:
    line_end = buffer.rfind(b"\n")
    if line_end >= 0:
      return line_end + 1
  if not forced or kind == JSON_LINES:
    # A JSON Lines document is one line: never cut inside it (half a JSON
    # object parses as nothing); its unit grows to hold the whole line.
    return 0
  space = buffer.rfind(b" ")
  if space >= 0:
    return space + 1
  position = len(buffer) - 1  # Never inside a UTF-8 sequence.
  while position > 0 and 0x80 <= buffer[position] < 0xC0:
    position -= 1
  return position or len(buffer)


def iter_units(files: list[CorpusFile], unit_bytes: int
               ) -> Iterator[CorpusUnit]:
  """Streams the corpus as units of about `unit_bytes` (memory stays flat).

  The cuts depend only on the files' contents and `unit_bytes`.

  Raises:
    BuildError: a file cannot be read or decompressed.
  """
  index, corpus_offset = 0, 0
  for corpus_file in files:
    buffer = b""
    try:
      with _open(corpus_file.path) as stream:
        while True:
          block = stream.read(unit_bytes)
          buffer += block
          while buffer and (len(buffer) >= unit_bytes or not block):
            cut = (len(buffer) if not block else
                   _cut_position(buffer, corpus_file.kind,
                                 forced=len(buffer) >= 4 * unit_bytes))
            if not cut:
              break
            yield CorpusUnit(index=index, path=corpus_file.path,
                             kind=corpus_file.kind, start=corpus_offset,
                             data=buffer[:cut])
            index += 1
            corpus_offset += cut
            buffer = buffer[cut:]
          if not block:
            break
    except (OSError, EOFError, ValueError) as error:
      raise BuildError(f"cannot read {corpus_file.path} ({error}): fix or "
                       "remove the file") from None
