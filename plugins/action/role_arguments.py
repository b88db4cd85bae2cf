# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind sparkops.inference.role_arguments: runs on the controller only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

from ansible_collections.sparkops.inference.plugins.plugin_utils._controller import ControllerAction
from ansible_collections.sparkops.inference.plugins.module_utils._role_args import as_shipped, check_role, options_of

# this collection's roles/, beside plugins/ (a checkout, an installed collection, an EE alike)
ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
_SPECS = {}
# libyaml's parser where PyYAML was built with it (the safe constructor either way): reading the
# roles' specs and defaults took ~8 % of a re-run's controller CPU with the pure-Python one
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml(path):
    with open(path) as f:
        return yaml.load(f, Loader=_LOADER)  # a safe loader either way


def role_options(role, entry_point):
    """The options of one of this collection's roles (its meta/argument_specs.yml) and its defaults
    (defaults/main.yml, as written: templates unrendered), read once a process."""
    key = (role, entry_point)
    if key not in _SPECS:
        path = os.path.join(ROLES, role, "meta", "argument_specs.yml")
        try:
            options = options_of(_yaml(path), entry_point)
            defaults_path = os.path.join(ROLES, role, "defaults", "main.yml")
            defaults = (_yaml(defaults_path) or {}) if os.path.exists(defaults_path) else {}
        except (IOError, OSError, yaml.YAMLError) as exc:
            raise ValueError("cannot read the argument spec of the %s role (%s): %s" % (role, path, exc))
        _SPECS[key] = (options, defaults)
    return _SPECS[key]


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = dict(
        roles=dict(type="list", elements="str", required=True),
        entry_point=dict(type="str", default="main"),
    )

    def act(self, args, task_vars):
        problems, checked = [], {}
        for role in args["roles"]:
            try:
                options, defaults = role_options(role, args["entry_point"])
            except ValueError as exc:
                return {"failed": True, "msg": str(exc)}
            values = {}
            for name in options:
                if name not in task_vars or (name in defaults and as_shipped(task_vars[name], defaults[name])):
                    continue
                try:
                    values[name] = self._templar.template(task_vars[name])
                except Exception as exc:  # pylint: disable=broad-except  # an undefined name, a bad template
                    # a secret's template error may quote the secret: its kind only
                    why = type(exc).__name__ if options[name].get("no_log") or not str(exc) else str(exc).splitlines()[0]
                    problems.append("%s: the %s role cannot work it out: %s. Fix it, or drop it for its default"
                                    % (name, role, why))
            problems.extend(check_role(role, options, values))
            checked[role] = len(values)
        if problems:
            return {"failed": True, "problems": problems, "checked": checked,
                    "msg": "%s: %d variable(s) the roles would refuse when their phase starts:\n%s\n"
                           "Nothing was changed on any host." % (
                               task_vars.get("inventory_hostname"), len(problems),
                               "\n".join("- " + p for p in problems))}
        return {"checked": checked,
                "msg": "%d variable(s) set for %s as their roles document them" % (
                    sum(checked.values()), ", ".join(args["roles"]))}
