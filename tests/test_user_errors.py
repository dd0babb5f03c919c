"""One user-error base class (official_electra/errors.py) for every program.

Read from the source (ast), not by importing: several programs define absl
flags of the same name, so they cannot all be imported in one process. The
command-line behaviour itself (exit status 1, one `error:` line, `--verbose`)
is tested through the programs in tests/test_entry_points.py.
"""

import ast
import pathlib

import pytest

from official_electra import errors

_REPO = pathlib.Path(__file__).resolve().parent.parent
_PACKAGES = ("official_electra", "tfrecords_tools")

# Exception classes that are not a user's to fix, and why.
_NOT_USER_ERRORS = {
    "WorkerError": "a benchmark's worker process crashed or did not answer: "
                   "a bug or the machine, reported with its traceback",
    "Preempted": "SIGTERM, reported as `preempted:` (exit 75)",
}

# Programs that report no user error: every flag is an enum or a number absl
# checks, and what fails runs in worker processes (WorkerError).
_PROGRAMS_WITHOUT_USER_ERRORS = set()


def _sources():
  for package in _PACKAGES:
    for path in sorted((_REPO / package).rglob("*.py")):
      yield path.relative_to(_REPO).as_posix(), ast.parse(path.read_text())


def _dotted(node):
  if isinstance(node, ast.Name):
    return node.id
  if isinstance(node, ast.Attribute):
    return f"{_dotted(node.value)}.{node.attr}"
  return ""


def _exception_classes():
  """{class name: (file, [base names, last component only])}."""
  classes = {}
  for path, tree in _sources():
    for node in ast.walk(tree):
      if isinstance(node, ast.ClassDef) and node.bases:
        bases = [_dotted(base).rsplit(".", 1)[-1] for base in node.bases]
        classes.setdefault(node.name, []).append((path, bases))
  # Keep the classes that derive, through the project's classes, from an
  # exception.
  builtin = {"Exception", "ValueError", "RuntimeError", "OSError",
             "KeyError", "TypeError"}
  exceptions = {}
  changed = True
  while changed:
    changed = False
    for name, definitions in classes.items():
      for path, bases in definitions:
        if (name, path) not in exceptions and any(
            base in builtin or base in {n for n, _ in exceptions}
            for base in bases):
          exceptions[(name, path)] = bases
          changed = True
  return exceptions


def test_user_error_is_a_value_error_and_its_message_is_the_line():
  error = errors.UserError("x.txt: no such file; pass a file")
  assert isinstance(error, ValueError)
  assert str(error) == "x.txt: no such file; pass a file"


def test_every_exception_class_of_the_project_is_a_user_error_or_listed():
  exceptions = _exception_classes()
  assert len(exceptions) >= 20, sorted(exceptions)  # the scan found them
  user_errors = {"UserError"}
  changed = True
  while changed:
    changed = False
    for (name, _), bases in exceptions.items():
      if name not in user_errors and user_errors.intersection(bases):
        user_errors.add(name)
        changed = True
  not_user = sorted(f"{path}: {name}" for (name, path) in exceptions
                    if name not in user_errors
                    and name not in _NOT_USER_ERRORS)
  assert not not_user, (
      "subclass official_electra.errors.UserError (or list the class in "
      f"_NOT_USER_ERRORS with the reason): {not_user}")
  for name in _NOT_USER_ERRORS:
    assert name in {n for n, _ in exceptions}, f"{name} no longer exists"


def _handlers_reporting_errors(tree):
  """The `except` clauses whose body calls command_line.exit_with_error."""
  for node in ast.walk(tree):
    if isinstance(node, ast.ExceptHandler) and any(
        isinstance(call, ast.Call)
        and _dotted(call.func).endswith("exit_with_error")
        for statement in node.body for call in ast.walk(statement)):
      yield node


def test_every_program_reports_exactly_the_user_error_class():
  programs = 0
  for path, tree in _sources():
    is_program = any(
        isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
        for node in tree.body)
    if not is_program:
      continue
    programs += 1
    handlers = list(_handlers_reporting_errors(tree))
    if path in _PROGRAMS_WITHOUT_USER_ERRORS:
      assert not handlers, f"{path} reports errors now: drop it from the list"
      continue
    assert handlers, f"{path}: main() does not report user errors"
    for handler in handlers:
      assert ast.unparse(handler.type) == "errors.UserError", (
          f"{path}:{handler.lineno}: catch errors.UserError, not "
          f"{ast.unparse(handler.type)}")
    assert "_USER_ERRORS" not in ast.unparse(tree), path
    assert "verbose" in ast.unparse(tree), f"{path} has no --verbose"
  assert programs >= 15, programs


@pytest.mark.parametrize("module", ["official_electra.modeling.errors",
                                    "tfrecords_tools.errors"])
def test_tier_errors_are_user_errors(module):
  imported = __import__(module, fromlist=["*"])
  classes = [value for value in vars(imported).values()
             if isinstance(value, type) and issubclass(value, Exception)]
  assert classes
  for error_class in classes:
    assert issubclass(error_class, errors.UserError), error_class
