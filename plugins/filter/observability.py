# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What monitoring needs of a deployed cluster, from module_utils/_metrics (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


# The module_utils below is imported when a filter runs, not when this file loads: to find one
# filter, ansible-core loads every filter file of the collection, in every task worker that
# uses one (docs/performance.md, "Filters").
def _mu():
    from ansible_collections.sparkops.inference.plugins.module_utils import _metrics
    return _metrics


def prometheus_targets(inputs):
    try:
        return _mu().prometheus_targets(dict(inputs))
    except (KeyError, ValueError) as exc:
        raise AnsibleFilterError("prometheus_targets: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"prometheus_targets": prometheus_targets}
