# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watchdog's state file in one line, and its settings checked, as module_utils/_watchdog does."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleFilterError


# The module_utils below is imported when a filter runs, not when this file loads: to find one
# filter, ansible-core loads every filter file of the collection, in every task worker that
# uses one (docs/performance.md, "Filters").
def _mu():
    from ansible_collections.sparkops.inference.plugins.module_utils import _watchdog
    return _watchdog


def watchdog_describe(state, now=None):
    if state is not None and not isinstance(state, dict):
        raise AnsibleFilterError("watchdog_describe: expected the state file's document (a dict), found %s"
                                 % type(state).__name__)
    return _mu().describe(state or {}, time.time() if now is None else float(now))


def watchdog_settings_error(chosen):
    """What is wrong with the watchdog's settings (the role's watchdog_* variables without their
    prefix), as the agents would refuse them at their start; an empty string when nothing is."""
    if not isinstance(chosen, dict):
        raise AnsibleFilterError("watchdog_settings_error: expected the settings (a dict), found %s"
                                 % type(chosen).__name__)
    watchdog = _mu()
    try:
        watchdog.settings(chosen)
    except watchdog.ConfigError as exc:
        return str(exc)
    return ""


class FilterModule(object):
    def filters(self):
        return {"watchdog_describe": watchdog_describe, "watchdog_settings_error": watchdog_settings_error}
