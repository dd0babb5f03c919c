"""A missing `../shared` skips its tests on a user's clone, fails them in CI."""

import pytest

from tests import conftest


def test_a_users_clone_skips_with_the_reason(monkeypatch):
  monkeypatch.delenv("CI", raising=False)
  with pytest.raises(pytest.skip.Exception, match="vocab.txt is absent"):
    conftest.missing_shared_data("vocab.txt is absent")


@pytest.mark.parametrize("value", ["true", "True"])
def test_ci_fails_instead_of_skipping(monkeypatch, value):
  monkeypatch.setenv("CI", value)
  with pytest.raises(pytest.fail.Exception,
                     match="vocab.txt is absent; CI=true, where ../shared"):
    conftest.missing_shared_data("vocab.txt is absent")


def test_ci_false_still_skips(monkeypatch):
  monkeypatch.setenv("CI", "false")
  with pytest.raises(pytest.skip.Exception):
    conftest.missing_shared_data("vocab.txt is absent")
