"""What the entry points share: the gin lookup, the error line, exit codes.

A gin file is looked up in the current folder, then in the repository (so
`--gin_file=gin/small.gin` works from anywhere).

Exit status of every `python -m` program (official_electra.* and
tfrecords_tools.*):

- 0: done.
- 1 (`USER_ERROR_EXIT_STATUS`): an input or setting the user can fix, that
  is an `official_electra.errors.UserError` (every program catches that one
  class, and only it); stderr holds `error: <what, where and the fix>` (with,
  for some errors, indented detail lines below it) and no traceback.
  `--verbose` shows the traceback.
- 75 (`PREEMPTED_EXIT_STATUS`, EX_TEMPFAIL "try again later"): stopped by
  SIGTERM after saving a checkpoint; stderr holds `preempted: ...`. The work
  is saved, not done: rerun the same command to resume. Not 0, so a scheduler
  restarts the job and `train && export` waits.
- anything else: a bug or a crash (a traceback).

Flag combinations (exactly one source, one of two inputs) are checked by the
programs, not with absl's `mark_flags_as_mutual_exclusive` or
`register_validator`: absl reports those as `FATAL Flags parsing error: ...`
plus a help hint on two lines, outside this contract; required flags use
absl's `mark_flags_as_required` (the missing flag's name is the whole fix).
"""

import os
import sys

import gin

from official_electra import errors
from official_electra import settings_check

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_ERROR_EXIT_STATUS = 1
PREEMPTED_EXIT_STATUS = 75

# gin appends this, and the configurable's signature, to errors raised inside
# a configurable.
_GIN_CONTEXT = "\n  In call to configurable"


# One class for gin files, bindings and settings of the wrong type or range
# (its subclass `settings_check.SettingError`).
GinConfigError = settings_check.GinConfigError


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
    sources = ", ".join(resolved + (["--gin_bindings"] if gin_bindings else []))
    raise GinConfigError(
        f"gin config {sources or '(none)'}: {errors.first_line(error)}; "
        f"{parameters_hint}") from None
  return resolved


def user_message(error):
  """The error's message without gin's appended call context."""
  message = str(error).strip()
  context = message.find(_GIN_CONTEXT)
  return message[:context].rstrip() if context >= 0 else message


def exit_with_error(error, verbose):
  """Prints `error: <message>` and exits 1 (re-raises with `verbose`).

  Call from inside the `except` block. The message's first line says what is
  wrong and the fix; some errors add indented detail lines (for example a
  conversion's missing and unexpected variables), which are kept.
  """
  if verbose:
    raise error
  print(f"error: {user_message(error)}", file=sys.stderr)
  sys.exit(USER_ERROR_EXIT_STATUS)


def exit_preempted(message):
  """Prints `preempted: <message>` and exits with `PREEMPTED_EXIT_STATUS`.

  The message names the checkpoint and says to rerun the same command.
  """
  print(f"preempted: {message}", file=sys.stderr, flush=True)
  sys.exit(PREEMPTED_EXIT_STATUS)
