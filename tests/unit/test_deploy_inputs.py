# -*- coding: utf-8 -*-
"""The re-run check's inputs (roles/deploy/vars/main.yml) against the roles' argument specs: an
option added to a role is an input of the digest unless it is left out with a reason, so a new
setting can never be changed without the next deploy noticing."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import yaml

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles")


def documented_options():
    names = set()
    for path in glob.glob(os.path.join(ROLES, "*", "meta", "argument_specs.yml")):
        with open(path) as f:
            for spec in yaml.safe_load(f)["argument_specs"].values():
                names |= set(spec.get("options") or {})
    return names


def test_every_documented_option_is_an_input_or_left_out_with_a_reason():
    with open(os.path.join(ROLES, "deploy", "vars", "main.yml")) as f:
        deploy_vars = yaml.safe_load(f)
    inputs, left_out = deploy_vars["deploy_input_names"], deploy_vars["deploy_input_names_left_out"]
    options = documented_options()
    assert len(options) > 100  # the specs were found
    assert len(inputs) == len(set(inputs))
    assert not set(inputs) & set(left_out)
    missing = options - set(inputs) - set(left_out)
    assert not missing, "add these options to deploy_input_names (or, with a reason, to deploy_input_names_left_out): %s" % sorted(missing)
    assert set(left_out) <= options, "left out but not an option any more: %s" % sorted(set(left_out) - options)
    assert all(isinstance(why, str) and why for why in left_out.values())
    # per-host inventory variables that the roles read but do not document as role options
    assert set(inputs) - options == {"ansible_host", "fabric_address"}


def test_the_phase_tags_are_the_deploys_own():
    """deploy_phase_tags (a run that skips one of them does not take the re-run check) are the tags
    of the deploy's own tasks, less `report` (--skip-tags report deploys without writing a report)."""
    with open(os.path.join(ROLES, "deploy", "vars", "main.yml")) as f:
        phase_tags = set(yaml.safe_load(f)["deploy_phase_tags"])
    with open(os.path.join(ROLES, "deploy", "tasks", "main.yml")) as f:
        tasks = yaml.safe_load(f)

    def tags(items):
        found = set()
        for item in items:
            found |= set(item.get("tags") or [])
            for key in ("block", "rescue", "always"):
                found |= tags(item.get(key) or [])
        return found

    used = tags(tasks)
    assert {"engine_image", "ray_cluster", "model_server", "report"} <= used  # the tasks were read
    assert used - {"report"} == phase_tags, "deploy_phase_tags should be %s" % sorted(used - {"report"})
