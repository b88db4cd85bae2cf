# -*- coding: utf-8 -*-
"""What the unit tests need from ansible-core, on every version the collection supports
(meta/runtime.yml: 2.17 and newer). ansible-core 2.19 added ansible.module_utils.testing."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from ansible.module_utils.testing import patch_module_args  # noqa: F401 pylint: disable=unused-import
except ImportError:  # ansible-core < 2.19: the module reads its arguments from basic._ANSIBLE_ARGS
    import contextlib
    import json

    from ansible.module_utils import basic
    from ansible.module_utils.common.text.converters import to_bytes

    @contextlib.contextmanager
    def patch_module_args(args=None):
        """A module's arguments for the duration of the block, as ansible-core passes them."""
        args = dict(args or {})
        args.setdefault("_ansible_remote_tmp", "/tmp")
        args.setdefault("_ansible_keep_remote_files", False)
        before = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = before
