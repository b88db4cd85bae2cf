# Modules run in their own process on the target, where ansible-core is not "the controller".
# Tests of controller plugins (filters) in the same pytest process import controller code, which
# flips ansible.module_utils._internal.is_controller and sends module warnings to the display
# instead of the module result: keep module tests in the module context.
import pytest

from ansible.module_utils import _internal


@pytest.fixture(autouse=True)
def module_context(monkeypatch):
    monkeypatch.setattr(_internal, "is_controller", False)
