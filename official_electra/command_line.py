"""What the entry points share: finding and parsing gin files, the error line.

A gin file is looked up in the current folder, then in the repository (so
`--gin_file=gin/small.gin` works from anywhere). Errors a user can fix are one
`error: ...` line on stderr and exit status 1; `--verbose` shows the traceback.
"""

import os
import sys

import gin

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class GinConfigError(ValueError):
  """A gin file is missing or a binding does not parse or name a parameter."""


def parse_gin(gin_files, gin_bindings, missing_file_hint, parameters_hint):
  """Parses gin files (found in the current folder or the repo) and bindings.

  Args:
    gin_files: paths, relative to the current folder or the repository.
    gin_bindings: gin binding strings.
    missing_file_hint: the fix named when a file does not exist (e.g. "see
      gin/ for tiny.gin, small.gin ...").
    parameters_hint: the fix named when a binding does not parse.

  Returns:
    The resolved gin file paths.

  Raises:
    GinConfigError: one line naming the file and the fix.
  """
  resolved = []
  for gin_file in gin_files:
    if not os.path.isfile(gin_file) and os.path.isfile(
        os.path.join(REPO_ROOT, gin_file)):
      gin_file = os.path.join(REPO_ROOT, gin_file)
    if not os.path.isfile(gin_file):
      raise GinConfigError(f"{gin_file}: no such gin file; {missing_file_hint}")
    resolved.append(gin_file)
  gin.add_config_file_search_path(REPO_ROOT)
  try:
    gin.parse_config_files_and_bindings(resolved, gin_bindings)
  except (ValueError, KeyError, SyntaxError, IOError) as error:
    first_line = str(error).strip().splitlines()[0]
    sources = ", ".join(resolved + (["--gin_bindings"] if gin_bindings else []))
    raise GinConfigError(f"gin config {sources or '(none)'}: {first_line}; "
                         f"{parameters_hint}") from None
  return resolved


def exit_with_error(error, verbose):
  """Prints `error: <first line>` and exits 1 (re-raises with `verbose`).

  Call from inside the `except` block. Only the first line is printed: gin
  appends "In call to configurable ..." lines to errors raised inside a
  configurable.
  """
  if verbose:
    raise error
  print(f"error: {str(error).strip().splitlines()[0]}", file=sys.stderr)
  sys.exit(1)
