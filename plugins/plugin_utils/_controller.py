# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base of this collection's controller-side action plugins (they touch no host)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase


class ControllerAction(ActionBase):
    """Validates the task's arguments against ARGUMENT_SPEC, then returns act(args, task_vars)
    merged into the result (changed false unless act says otherwise)."""

    TRANSFERS_FILES = False
    _requires_connection = False
    ARGUMENT_SPEC = {}

    def run(self, tmp=None, task_vars=None):
        result = super(ControllerAction, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)
        result["changed"] = False
        result.update(self.act(args, task_vars or {}))
        return result

    def act(self, args, task_vars):
        raise NotImplementedError
