# -*- coding: utf-8 -*-
"""The contract between the phases (docs/architecture.md) against the roles: every name one role
sets (set_fact, register) and another reads - in a task, a template, or through the filters that
read hostvars for it (_rollback.HOST_KEYS, _report.HEAD_KEYS / HOST_KEYS) - is named in the doc;
every name the doc's phase table gives is in the code, so a renamed or dropped fact cannot stay
documented; and, in the order deploy.yml runs the roles (roles/deploy/tasks/main.yml, the one
phase list, walked with every role it imports or includes), each shared name has a writer that
runs before its reader's last run, so a phase moved ahead of what it consumes fails here."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

import pytest
import yaml

from ansible_collections.sparkops.inference.plugins.module_utils import _report, _rollback

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DOC = os.path.join(ROOT, "docs", "architecture.md")
IDENT = re.compile(r"\b[a-z][a-z0-9_]*\b")
# what the roles' filters read of each host on the roles' behalf (the role names no key itself)
FILTER_READS = {"report": set(_report.HEAD_KEYS) | set(_report.HOST_KEYS), "rollback": set(_rollback.HOST_KEYS)}


def _set_by(node, out):
    """Names a task list sets: register, set_fact's keys."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "register" and isinstance(value, str):
                out.add(value)
            if key in ("ansible.builtin.set_fact", "set_fact") and isinstance(value, dict):
                out.update(k for k in value if k != "cacheable")
            _set_by(value, out)
    elif isinstance(node, list):
        for item in node:
            _set_by(item, out)


def roles():
    """{role: (names it sets, names it reads)}"""
    found = {}
    for role in sorted(os.listdir(os.path.join(ROOT, "roles"))):
        sets, reads = set(), set(FILTER_READS.get(role, ()))
        for path in glob.glob(os.path.join(ROOT, "roles", role, "**", "*"), recursive=True):
            if not os.path.isfile(path) or "%smeta%s" % (os.sep, os.sep) in path:
                continue
            with open(path) as f:
                text = f.read()
            if "%stasks%s" % (os.sep, os.sep) in path and path.endswith(".yml"):
                _set_by(yaml.safe_load(text), sets)
            for expr in re.findall(r"\{\{(.*?)\}\}|\{%(.*?)%\}", text, re.S):
                reads.update(IDENT.findall(" ".join(expr)))
            # conditions are Jinja without braces
            for cond in re.findall(r"^\s*(?:when|failed_when|changed_when|until|that)\s*:(.*(?:\n\s+- .*)*)",
                                   text, re.M):
                reads.update(IDENT.findall(cond))
        found[role] = (sets, reads)
    return found


def shared_names():
    """{name: sorted [(role that sets it, role that reads it)]} for names crossing roles."""
    found, shared = roles(), {}
    for reader, (own, reads) in found.items():
        for writer, (sets, dummy) in found.items():
            if writer != reader:
                for name in (reads & sets) - own:
                    shared.setdefault(name, set()).add((writer, reader))
    return dict((k, sorted(v)) for k, v in shared.items())


def _tasks_of(role, tasks_from="main"):
    path = os.path.join(ROOT, "roles", role, "tasks", tasks_from + ".yml")
    with open(path) as f:
        return yaml.safe_load(f) or []


def _walk(tasks, role, order, seen, parts):
    """Append, in the order a deploy reaches them, the role each task belongs to; a task that
    imports or includes a role (or a task file) is followed into it; of a block, the `parts`."""
    for task in tasks:
        for part in parts:
            if part in task:
                _walk(task[part], role, order, seen, parts)
        if any(part in task for part in ("block", "rescue", "always")):
            continue
        target = task.get("ansible.builtin.import_role") or task.get("ansible.builtin.include_role")
        files = task.get("ansible.builtin.import_tasks") or task.get("ansible.builtin.include_tasks")
        if target:
            name = target["name"].rsplit(".", 1)[-1]
            key = (name, target.get("tasks_from", "main"))
            if key not in seen:  # the lock's role is marked into every phase: once is its place
                _walk(_tasks_of(*key), name, order, seen | {key}, parts)
        elif files:
            _walk(_tasks_of(role, files[:-len(".yml")]), role, order, seen, parts)
        else:
            order.append(role)


def deploy_order(failed=False):
    """[role of each task, in the order roles/deploy/tasks/main.yml runs them]: a deploy that
    succeeds (the blocks and their always), or one that failed at its last task (every task of the
    blocks, then their rescue - the rollback and the report it includes)."""
    order = []
    _walk(_tasks_of("deploy"), "deploy", order, frozenset(),
          ("block", "rescue", "always") if failed else ("block", "always"))
    return order


@pytest.mark.parametrize("failed", [False, True], ids=["succeeds", "fails"])
def test_every_shared_name_is_written_before_its_reader_runs_last(failed):
    order = deploy_order(failed)
    at = {}
    for i, role in enumerate(order):
        at.setdefault(role, []).append(i)
    phases = [r for i, r in enumerate(order) if i == 0 or order[i - 1] != r]
    assert {"preflight", "engine_image", "gpu_memory", "fabric", "ray_cluster", "model_server", "watchdog",
            "report"} | ({"rollback"} if failed else set()) <= set(at), phases
    late = []
    for name, pairs in sorted(shared_names().items()):
        for writer, reader in pairs:
            if writer in at and reader in at and min(at[writer]) > max(at[reader]):
                late.append("%s: written by %s, which runs after %s's last task" % (name, writer, reader))
    assert not late, "read before any phase writes it, in deploy.yml's order %s: %s" % (phases, late)


def test_every_name_one_role_leaves_another_is_in_the_contract():
    with open(DOC) as f:
        doc = f.read()
    shared = shared_names()
    assert len(shared) > 15  # the roles were read
    missing = dict((n, who) for n, who in sorted(shared.items()) if "`%s`" % n not in doc)
    assert not missing, ("docs/architecture.md does not name these facts that one role sets and another reads "
                         "(setter, reader): %s" % missing)


def test_every_name_the_contract_gives_is_in_the_code():
    with open(DOC) as f:
        doc = f.read()
    table = doc.split("| phase (role) | produces | consumes |", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`([a-z][a-z0-9]*_[a-z0-9_]+)`", table))
    assert len(named) > 25
    code = ""
    for path in glob.glob(os.path.join(ROOT, "roles", "**", "*.*"), recursive=True) + \
            glob.glob(os.path.join(ROOT, "plugins", "**", "*.py"), recursive=True) + \
            glob.glob(os.path.join(ROOT, "playbooks", "*.yml")):
        with open(path) as f:
            code += f.read()
    lacking = sorted(n for n in named if not re.search(r"\b%s\b" % re.escape(n), code))
    assert not lacking, "docs/architecture.md's phase table names what no role, plugin or playbook has: %s" % lacking
