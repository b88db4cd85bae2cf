# -*- coding: utf-8 -*-
"""Bench helper (not part of the collection): count the modules a playbook runs on the hosts.

Enabled by bench/rerun.py (ANSIBLE_CALLBACK_PLUGINS=bench/callback_plugins,
ANSIBLE_CALLBACKS_ENABLED=sparkops_calls, SPARKOPS_CALLS_FILE=PATH). Every module an action
plugin sends to a host - a round trip over ssh - appends "host<TAB>role<TAB>module" to the file;
the worker processes inherit the wrapped ActionBase._execute_module from the parent (fork).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: sparkops_calls
type: aggregate
short_description: count module executions per host (bench only)
description: Appends one line per module execution to E(SPARKOPS_CALLS_FILE).
"""

import os

from ansible.plugins.action import ActionBase
from ansible.plugins.callback import CallbackBase

_ORIGINAL = ActionBase._execute_module


def _counted(self, module_name=None, module_args=None, task_vars=None, **kwargs):
    path = os.environ.get("SPARKOPS_CALLS_FILE")
    if path:
        role = self._task._role.get_name() if self._task._role else "-"
        host = (task_vars or {}).get("inventory_hostname", "?")
        delegated = self._task.delegate_to
        if delegated:
            host = "%s (delegated)" % delegated
        line = "%s\t%s\t%s\n" % (host, role, module_name or self._task.action)
        with open(path, "a") as out:
            out.write(line)
    return _ORIGINAL(self, module_name=module_name, module_args=module_args, task_vars=task_vars, **kwargs)


ActionBase._execute_module = _counted


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "sparkops_calls"
    CALLBACK_NEEDS_ENABLED = True
