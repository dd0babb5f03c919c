"""The one base class of the errors a user can fix.

Every program (`python -m official_electra.*` and `tfrecords_tools.*`)
catches `UserError` and prints it as one `error:` line with exit status 1
(`command_line.exit_with_error`; `--verbose` shows the traceback). Any other
exception is a bug or a crash and keeps its traceback. Each tier subclasses
`UserError` for its own errors (`CheckpointError`, `GlueDataError`,
`BuildError`, ...), so a caller can still catch one kind. Pure Python: every
tier imports it.
"""


class UserError(ValueError):
  """An input, setting or file the user can fix.

  The message's first line says what is wrong, where (the file, flag or
  binding) and the fix; indented detail lines may follow. A `ValueError`, as
  every one of these errors was before they shared this base.
  """


def first_line(error):
  """The first line of an exception's message (its type name when empty), to
  quote inside a one-line message."""
  text = str(error).strip()
  return text.splitlines()[0] if text else type(error).__name__
