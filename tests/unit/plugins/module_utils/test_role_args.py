# -*- coding: utf-8 -*-
"""_role_args: each role's variables against its own meta/argument_specs.yml (the collection's real
specs and defaults, not copies), as the deploy's preflight checks them before anything is stopped."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import pytest
import yaml

from ansible_collections.sparkops.inference.plugins.module_utils._role_args import (
    as_shipped,
    check_role,
    expected,
    options_of,
    plain,
)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
               for p in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))


def spec(role, entry_point="main"):
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as f:
        return options_of(yaml.safe_load(f), entry_point)


def defaults(role):
    path = os.path.join(ROOT, "roles", role, "defaults", "main.yml")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return yaml.safe_load(f) or {}


@pytest.mark.parametrize("role", ROLES)
def test_every_role_s_own_defaults_pass_its_spec(role):
    """What a role ships is what its spec allows (a template is checked when it is rendered)."""
    options = spec(role)
    assert options, role
    literal = dict((k, v) for k, v in defaults(role).items() if k in options and "{{" not in str(v))
    assert check_role(role, options, literal) == []


def test_a_value_of_the_wrong_kind_is_named_with_what_the_role_expects_and_what_to_do():
    problems = check_role("fabric", spec("fabric"), {"fabric_peer_port": "abc", "fabric_check_peers": True,
                                                     "fabric_peer_timeout": 2})
    assert problems == ["fabric_peer_port is 'abc': the fabric role expects a whole number - TCP port tried on "
                        "each peer (a refused connection counts as reachable). Set it so, or drop it for its "
                        "default (22)"]


def test_what_ansible_core_would_convert_passes_and_every_problem_is_reported_at_once():
    options = spec("engine_image")
    assert check_role("engine_image", options, {"engine_image_pull_timeout": "600",
                                                "engine_image_pull_policy": "always"}) == []
    problems = check_role("engine_image", options, {"engine_image_pull_timeout": "soon",
                                                    "engine_image_pull_policy": "sometimes"})
    assert [p.split(" is ")[0] for p in problems] == ["engine_image_pull_policy", "engine_image_pull_timeout"]
    assert "expects one of missing, always - missing pulls images not on a host" in problems[0]


def test_a_secret_s_value_is_never_shown():
    """A no_log option's problem names it, never its value (the roles' one secret, the registry password,
    is a string: any value converts; a secret of another type is what this guards)."""
    assert spec("engine_image")["engine_image_registry_password"]["no_log"] is True
    problems = check_role("some_role", {"some_token": {"type": "int", "no_log": True}}, {"some_token": "s3cr3t"})
    assert problems == ["some_token: the some_role role expects a whole number. Set it so (its value is not shown)"]


def test_a_variable_the_play_does_not_hold_is_left_to_its_default():
    assert check_role("fabric", spec("fabric"), {}) == []


def test_a_role_s_own_default_is_left_to_its_phase_and_anything_else_is_checked():
    """As the controller hands them over: strings are a str subclass there (ansible-core's tags)."""
    class Tagged(str):
        pass
    template = defaults("fabric")["fabric_master_port"]
    assert "{{" in template and as_shipped(Tagged(template), template)  # rendered when the phase runs
    assert as_shipped(22, 22) and as_shipped({}, {}) and as_shipped(Tagged(""), "")
    assert not as_shipped("22", 22)  # set as a string: checked (and converted, as ansible-core does)
    assert not as_shipped(1, True) and not as_shipped(Tagged("{{ 1 }}"), template)


def test_expected_in_words():
    assert expected({"type": "list", "elements": "str"}) == "a list, each item a string"
    assert expected({"type": "bool"}) == "true or false"
    assert expected({"type": "str", "choices": ["a", "b"]}) == "one of a, b"
    assert plain(["C(missing) pulls", "O(x) and V(y)."]) == "missing pulls x and y."


def _imports(tasks, out):
    for task in tasks or []:
        _imports(task.get("block"), out)
        _imports(task.get("rescue"), out)
        _imports(task.get("always"), out)
        role = task.get("ansible.builtin.import_role")
        if role:
            out.append(role)
        if "sparkops.inference.role_arguments" in task:
            out.append({"checked": task["sparkops.inference.role_arguments"]["roles"]})
    return out


def test_the_deploy_checks_in_preflight_exactly_the_phases_it_imports_without_their_own_check():
    """A phase imported with rolespec_validate false and missing from the preflight's list would run
    with no check of its variables at all; one on the list and checked again costs a task per host."""
    with open(os.path.join(ROOT, "roles", "deploy", "tasks", "main.yml")) as f:
        found = _imports(yaml.safe_load(f), [])
    checked = [i["checked"] for i in found if "checked" in i]
    assert len(checked) == 1
    unchecked = [i["name"].split(".")[-1] for i in found
                 if "name" in i and i.get("rolespec_validate") is False]
    assert sorted(unchecked) == sorted(checked[0])
    # and the check comes before any of them
    order = [i.get("name", "checked") for i in found]
    assert order.index("checked") < min(order.index("sparkops.inference." + r) for r in unchecked)
