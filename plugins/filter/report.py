# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report_document: the deploy's report (latest.json) from the play's hostvars (logic in
module_utils/_report; docs in report_document.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.plugin_utils._lazy import module_utils


def report_document(hosts, hostvars, head, workers=(), model_path=None, marks=None, failure=None, rolled_back=False):
    hosts = list(hosts or [])
    if head not in hosts:
        raise AnsibleFilterError("report_document: the head %r is not one of the play's hosts (%s)"
                                 % (head, ", ".join(hosts) or "none"))
    report = module_utils("_report")
    picked = []
    for name in hosts:
        hv = hostvars[name]
        keys = report.HEAD_KEYS + report.HOST_KEYS if name == head else report.HOST_KEYS
        picked.append((name, dict((k, hv[k]) for k in keys if k in hv)))
    finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return report.document(picked, head, workers, model_path, marks, failure, rolled_back, finished)


class FilterModule(object):
    def filters(self):
        return {"report_document": report_document}
