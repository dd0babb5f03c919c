"""A deterministic English corpus taken from Python docstrings on this machine.

For tests, the README quickstart and the benchmarks: nothing is downloaded.
Each docstring is one document; each of its paragraphs is one line (the
hard-wrapped lines of a paragraph are joined); a blank line separates
documents, which is the input format of `build_pretraining_dataset`.
"""

import ast
import hashlib
import inspect
import os
import sysconfig
from typing import Iterable, Iterator, Optional, Sequence

from tfrecords_tools import errors

_MIN_DOCUMENT_CHARS = 80
_DOCUMENTED_NODES = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def default_source_roots() -> list[str]:
  """The standard library, then the installed packages (site-packages)."""
  paths = sysconfig.get_paths()
  roots = [paths["stdlib"], paths["purelib"]]
  return [root for root in dict.fromkeys(roots) if os.path.isdir(root)]


def _python_files(roots: Sequence[str]) -> Iterator[str]:
  for root in roots:
    for directory, subdirectories, filenames in os.walk(root):
      subdirectories.sort()
      for filename in sorted(filenames):
        if filename.endswith(".py"):
          yield os.path.join(directory, filename)


def _docstrings(source: bytes) -> Iterator[str]:
  """Docstrings of the module and of its (nested) classes and functions."""
  try:
    pending = [ast.parse(source)]
  except (SyntaxError, ValueError, RecursionError, MemoryError):
    return
  while pending:
    node = pending.pop()
    docstring = ast.get_docstring(node, clean=False)
    if docstring:
      yield docstring
    pending.extend(reversed([child for child in node.body
                             if isinstance(child, _DOCUMENTED_NODES)]))


def _as_document(docstring: str) -> str:
  """One line per paragraph, whitespace inside a line collapsed."""
  paragraphs = inspect.cleandoc(docstring).split("\n\n")
  lines = (" ".join(paragraph.split()) for paragraph in paragraphs)
  return "\n".join(line for line in lines if line)


def iter_documents(roots: Optional[Iterable[str]] = None) -> Iterator[str]:
  """Yields distinct docstring documents in a fixed order (sorted paths).

  Args:
    roots: directories to walk for `.py` files; `default_source_roots()` when
      None.

  Yields:
    Documents of at least 80 characters, one paragraph per line, each
    distinct text once.
  """
  seen = set()
  for path in _python_files(list(roots or default_source_roots())):
    try:
      with open(path, "rb") as source_file:
        source = source_file.read()
    except OSError:
      continue
    for docstring in _docstrings(source):
      document = _as_document(docstring)
      digest = hashlib.sha1(document.encode("utf-8", "replace")).digest()
      if len(document) < _MIN_DOCUMENT_CHARS or digest in seen:
        continue
      seen.add(digest)
      yield document


def write_stdlib_corpus(path: str, max_bytes: int,
                        roots: Optional[Iterable[str]] = None) -> int:
  """Writes up to `max_bytes` of docstring documents to `path` (UTF-8).

  The same arguments on the same Python installation give the same file.

  Args:
    path: the text file to write.
    max_bytes: stop before the file would exceed this many bytes.
    roots: directories to take `.py` files from; the standard library and
      site-packages when None.

  Returns:
    The number of bytes written.

  Raises:
    BuildError: if no document fits in `max_bytes`.
  """
  written = 0
  with open(path, "wb") as corpus_file:
    for document in iter_documents(roots):
      data = (document + "\n\n").encode("utf-8", "replace")
      if written + len(data) > max_bytes:
        break
      corpus_file.write(data)
      written += len(data)
  if written == 0:
    raise errors.BuildError(
        f"no docstring document fits in {max_bytes} bytes: allow more bytes "
        "(the shortest documents take a few hundred)")
  return written
