# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's documented variables checked against its argument spec, one variable at a time, so
each problem names its variable, what was found, what the role expects and what to do.

The deploy checks every phase's variables this way in its preflight (the action plugin
sparkops.inference.role_arguments), before anything is stopped, and imports the phases with
rolespec_validate false: ansible-core's own check of a role's spec runs when the role starts,
and a phase starts after gpu_memory stopped the old services - a variable of the wrong type
there failed the deploy after the stop and rolled back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

# what an argument spec's type means, for an operator
_KINDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "a string",
          "list": "a list", "dict": "a mapping", "path": "a path", "raw": "any value"}


def options_of(spec_document, entry_point="main"):
    """A role's meta/argument_specs.yml (parsed) -> the options of an entry point ({} when none)."""
    specs = (spec_document or {}).get("argument_specs") or {}
    return dict((specs.get(entry_point) or {}).get("options") or {})


def expected(spec):
    """What one option's spec asks for, in words: 'a whole number', 'one of a, b', 'a list, each item a string'."""
    if spec.get("choices"):
        return "one of %s" % ", ".join(str(c) for c in spec["choices"])
    kind = spec.get("type", "str")
    words = _KINDS.get(kind, "a value of type %s" % kind)
    if kind == "list" and spec.get("elements"):
        words += ", each item %s" % _KINDS.get(spec["elements"], "of type %s" % spec["elements"])
    return words


_MARKUP = re.compile(r"\b[A-Z]{1,2}\(([^()]*)\)")


def plain(text):
    """A spec description as an operator reads it: ansible-doc's markup (C(x), O(x), V(x)...) dropped."""
    if isinstance(text, list):
        text = " ".join(text)
    return _MARKUP.sub(r"\1", text or "").strip()


def _short(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def as_shipped(value, default):
    """Whether a variable holds what its role ships (its defaults/main.yml value as written, a template
    unrendered): the role's own value, rendered and used when its phase runs. What the preflight checks
    is what an inventory, a play or -e set."""
    try:
        return isinstance(value, type(default)) and value == default
    except Exception:  # pylint: disable=broad-except  # a value that cannot be compared is checked
        return False


def check_option(role, name, spec, value):
    """None when `value` is what `spec` allows, else the problem in words (one line)."""
    result = ArgumentSpecValidator({name: spec}).validate({name: value}, validate_role_argument_spec=True)
    if not result.error_messages:
        return None
    description = plain(spec.get("description")).rstrip(".")
    default = (", or drop it for its default (%s)" % _short(spec["default"])) if "default" in spec else ""
    return "%s is %s: the %s role expects %s%s. Set it so%s" % (
        name, _short(value), role, expected(spec), (" - %s" % description) if description else "", default)


def check_role(role, options, values):
    """Every problem of `values` ({name: value}, the variables a play holds) against a role's options.
    A variable the play does not hold is not checked (its default applies); secrets (no_log) are never
    shown - only their names."""
    problems = []
    for name in sorted(options):
        if name not in values:
            continue
        spec = options[name]
        problem = check_option(role, name, spec, values[name])
        if problem is not None:
            if spec.get("no_log"):
                problem = "%s: the %s role expects %s. Set it so (its value is not shown)" % (
                    name, role, expected(spec))
            problems.append(problem)
    return problems
