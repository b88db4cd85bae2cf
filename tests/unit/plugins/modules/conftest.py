# Modules run in their own process on the target, where ansible-core is not "the controller".
# Tests of controller plugins (filters) in the same pytest process import controller code, which
# (ansible-core 2.19 and newer) flips ansible.module_utils._internal.is_controller and sends module
# warnings to the display instead of the module result: keep module tests in the module context.
import stat

import pytest

try:
    from ansible.module_utils import _internal
except ImportError:
    _internal = None


@pytest.fixture(autouse=True)
def module_context(monkeypatch):
    # ansible-core < 2.19 has no such switch (2.18 has the package, without it)
    if _internal is not None and hasattr(_internal, "is_controller"):
        monkeypatch.setattr(_internal, "is_controller", False)


@pytest.fixture
def executable():
    """Write an executable stand-in for a tool a module runs (nvidia-smi, docker, ...): path, body
    (with its #! line) -> the path, as a string for the module's argument."""
    def write(path, body):
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
        return str(path)
    return write
