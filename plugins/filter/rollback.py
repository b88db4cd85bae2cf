# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rollback_decision, rollback_message: after a failed deploy, what to roll back and what the run
says (logic in module_utils/_rollback; docs in rollback_decision.yml and rollback_message.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.plugin_utils._lazy import module_utils


def _hosts(hosts, hostvars):
    """[(name, {the keys _rollback reads})] in the play's order."""
    try:
        found = [(name, hostvars[name]) for name in hosts]
    except KeyError as exc:
        raise AnsibleFilterError("rollback: %s is not a host of this inventory" % exc)
    return [(name, dict((k, hv[k]) for k in module_utils("_rollback").HOST_KEYS if k in hv)) for name, hv in found]


def rollback_decision(hosts, hostvars, engine=None, restore_on_failure=True, after_stop=False):
    return module_utils("_rollback").decide(_hosts(hosts, hostvars), engine or {}, bool(restore_on_failure), bool(after_stop))


def rollback_message(hosts, hostvars, decision, head, restore_on_failure=True, could_touch=False,
                     ray_token_file="", secrets_dir="", secrets_kept_dir=""):
    missing = sorted({"rolled_back", "kept", "untouched", "interrupted", "failure"} - set(decision or {}))
    if missing:
        raise AnsibleFilterError("rollback_message: decision is rollback_decision's result; it lacks %s"
                                 % ", ".join(missing))
    return module_utils("_rollback").message(_hosts(hosts, hostvars), decision, head, bool(restore_on_failure),
                                             bool(could_touch), ray_token_file, secrets_dir, secrets_kept_dir)


class FilterModule(object):
    def filters(self):
        return {"rollback_decision": rollback_decision, "rollback_message": rollback_message}
