# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""engine_select: pick the first candidate every host can run (logic in module_utils/_engine)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: engine_select
short_description: Pick the first engine image that can serve the model on every host
version_added: 0.1.0
description:
  - Takes the candidates (preferred first) and each host's pull and probe results, and returns
    the selected image (or null) and a table row per candidate with the reasons it was rejected
    (pull failed, different images under one name, wrong CPU architecture, no engine, an
    architecture not native, no Ray).
options:
  _input:
    description: Candidate images, preferred first.
    type: list
    elements: str
    required: true
  hosts:
    description: The cluster hosts.
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars); each host's C(sparkops_engine_probes) (image -> probe result or C({error})) and C(sparkops_host.architecture) are read.
    type: dict
    required: true
  launcher:
    description:
      - How the engine is to be launched - V(auto) (Ray when the image has it, else the engine's own
        multi-node launch), V(ray) or V(native); an image that cannot be launched so is rejected.
    type: str
    choices: [auto, ray, native]
    default: auto
"""

EXAMPLES = r"""
- name: Select
  ansible.builtin.set_fact:
    engine_image_selection: "{{ candidates | sparkops.inference.engine_select(ansible_play_hosts, hostvars) }}"
"""

RETURN = r"""
_value:
  description: >-
    C({selected, rows, table, launcher, engine}); table is the rows as text lines, launcher and engine
    the selected image's (null when none is selected).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.plugin_utils._lazy import module_utils


DROP = ("ansible_facts", "invocation", "changed", "failed", "item", "ansible_loop_var", "_ansible_no_log",
        "_ansible_item_label", "_ansible_item_result", "_ansible_ignore_errors")


def engine_probe_map(probe, pull):
    """One host's results, image -> probe result, or {error} for an image that was not pulled."""
    out = {}
    for image, error in ((pull or {}).get("failed_images") or {}).items():
        out[image] = {"error": error}
    for entry in (pull or {}).get("images") or []:
        if entry.get("id") is None and not entry.get("error"):  # check mode: would be pulled
            out[entry["image"]] = {"pending": True}
    for res in (probe or {}).get("probes") or []:  # engine_probe with images
        out[res["image"]] = {"error": res["error"]} if res.get("error") else dict(
            (k, v) for k, v in res.items() if k not in DROP)
    return out


def engine_select(candidates, hosts, hostvars, launcher="auto"):
    engine = module_utils("_engine")
    probes, platforms = engine.host_inputs(hosts, hostvars)
    try:
        selected, rows = engine.select(list(candidates), probes, platforms, launcher)
    except engine.EngineError as exc:
        raise AnsibleFilterError(str(exc))
    chosen = next((r for r in rows if r["image"] == selected), {})
    return {"selected": selected, "rows": rows, "table": engine.table_text(rows),
            "launcher": chosen.get("launcher"), "engine": chosen.get("engine")}


class FilterModule(object):
    def filters(self):
        return {"engine_select": engine_select, "engine_probe_map": engine_probe_map}
