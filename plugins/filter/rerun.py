# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rerun_reasons, rerun_summary, collection_identity: the re-run check's verdict and the build of
this collection it compares (logic in module_utils/_rerun; docs in rerun_reasons.yml,
rerun_summary.yml and collection_identity.yml)."""

from __future__ import absolute_import, division, print_function
from ansible_collections.sparkops.inference.plugins.plugin_utils._lazy import module_utils

__metaclass__ = type


def rerun_reasons(hosts, hostvars, asked, head):
    checks = [(name, hostvars[name].get("deploy_check_record") or {}) for name in hosts] if asked else []
    return module_utils("_rerun").reasons(bool(asked), checks, head)


def rerun_summary(reasons, recorded_at=""):
    return module_utils("_rerun").summary(list(reasons or []), recorded_at)


def collection_identity(role_path):
    return module_utils("_rerun").collection_identity(str(role_path))


class FilterModule(object):
    def filters(self):
        return {"rerun_reasons": rerun_reasons, "rerun_summary": rerun_summary,
                "collection_identity": collection_identity}
