# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving generation kept while a new one starts (pure logic).

A re-deploy that replaces the engine or a Ray container first keeps the one that serves: stopped
(two 120 GB models do not fit side by side on a Spark) and renamed NAME-previous. When the new
engine is ready the kept ones are removed; when the deploy fails they are renamed back and
started again. Plans are lists of (action, container[, new name]) for the module to run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

SUFFIX = "-previous"


def previous(name, suffix=SUFFIX):
    return name + suffix


def plan_keep(names, present, suffix=SUFFIX):
    """Keep NAME as NAME-previous, stopped. names: in start order (Ray, then engine); present:
    {name: {"running": bool}} of what exists. The engine is stopped first (it drives the Ray
    ranks). A NAME-previous that exists already is the generation that last served (an earlier
    run kept it and never got a new engine ready): it stays, and NAME - that run's new, never
    ready container - is removed instead."""
    steps = []
    for name in reversed(list(names)):
        if name not in present:
            continue
        if previous(name, suffix) in present:
            steps.append(("remove", name))
            continue
        if present[name].get("running"):
            steps.append(("stop", name))
        steps.append(("rename", name, previous(name, suffix)))
    return steps


def plan_restore(names, present, suffix=SUFFIX):
    """Put the kept generation back: NAME (the new one, if any) removed, NAME-previous renamed to
    NAME and started, in start order."""
    steps = []
    for name in names:
        if previous(name, suffix) not in present:
            continue
        if name in present:
            steps.append(("remove", name))
        steps.append(("rename", previous(name, suffix), name))
        steps.append(("start", name))
    return steps


def plan_drop(names, present, suffix=SUFFIX):
    """The new generation serves: remove what was kept."""
    return [("remove", previous(n, suffix)) for n in names if previous(n, suffix) in present]
