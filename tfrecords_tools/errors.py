"""The one exception class of tfrecords_tools."""

from official_electra import errors


class BuildError(errors.UserError):
  """A problem a user can fix (bad input, flags, output dir); one-line message."""
