# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watchdog's state file in one line, and its settings checked, as module_utils/_watchdog does."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.plugin_utils._lazy import module_utils


def watchdog_describe(state, now=None):
    if state is not None and not isinstance(state, dict):
        raise AnsibleFilterError("watchdog_describe: expected the state file's document (a dict), found %s"
                                 % type(state).__name__)
    return module_utils("_watchdog").describe(state or {}, time.time() if now is None else float(now))


def watchdog_settings_error(chosen):
    """What is wrong with the watchdog's settings (the role's watchdog_* variables without their
    prefix), as the agents would refuse them at their start; an empty string when nothing is."""
    if not isinstance(chosen, dict):
        raise AnsibleFilterError("watchdog_settings_error: expected the settings (a dict), found %s"
                                 % type(chosen).__name__)
    watchdog = module_utils("_watchdog")
    try:
        watchdog.settings(chosen)
    except watchdog.ConfigError as exc:
        return str(exc)
    return ""


class FilterModule(object):
    def filters(self):
        return {"watchdog_describe": watchdog_describe, "watchdog_settings_error": watchdog_settings_error}
