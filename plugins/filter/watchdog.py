# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watchdog's state file in one line, as module_utils/_watchdog describes it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.module_utils import _watchdog


def watchdog_describe(state, now=None):
    if state is not None and not isinstance(state, dict):
        raise AnsibleFilterError("watchdog_describe: expected the state file's document (a dict), found %s"
                                 % type(state).__name__)
    return _watchdog.describe(state or {}, time.time() if now is None else float(now))


class FilterModule(object):
    def filters(self):
        return {"watchdog_describe": watchdog_describe}
