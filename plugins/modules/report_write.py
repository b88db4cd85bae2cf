#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: report_write
short_description: Write the deploy report as JSON on the controller
version_added: 0.1.0
description:
  - Writes O(report) as JSON (or O(text) as it is) into each of O(names) under O(dir) on the
    controller (the directory is created), atomically. Touches no host. Reports C(changed=false) - a report is a record,
    not a change to the hosts.
  - In check mode writes nothing (a dry run must not replace C(latest.json), the last real
    deploy's report that C(status.yml) shows); returns the paths it would write.
  - Implemented as an action plugin; this file holds its documentation.
author:
  - sparkops.inference developers (@sparkops)
options:
  dir:
    description: Directory on the controller.
    type: path
    required: true
  report:
    description:
      - The report - a dict or a list (a Prometheus file_sd target list is a list), written as JSON.
      - One of O(report) and O(text) is required.
    type: raw
  text:
    description: Text written as it is (the alert rules, YAML). Mutually exclusive with O(report).
    type: str
    version_added: 0.3.0
  names:
    description: File names to write (for example C(deploy-<time>.json) and C(latest.json)).
    type: list
    elements: str
    required: true
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.actiongroup_controller
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  action:
    support: full
  idempotent:
    support: full
  platform:
    support: full
    platforms: all
"""

EXAMPLES = r"""
- name: Write the report
  sparkops.inference.report_write:
    dir: ~/.sparkops/reports
    report: "{{ report_data }}"
    names: [latest.json]
  run_once: true
"""

RETURN = r"""
paths:
  description: The files written (in check mode, the files it would write).
  returned: always
  type: list
  elements: str
written:
  description: Whether the files were written (false in check mode).
  returned: always
  type: bool
  version_added: 0.2.0
"""
