# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What monitoring needs of a deployed cluster, from module_utils/_metrics (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.plugin_utils._lazy import module_utils


def prometheus_targets(inputs):
    try:
        return module_utils("_metrics").prometheus_targets(dict(inputs))
    except (KeyError, ValueError) as exc:
        raise AnsibleFilterError("prometheus_targets: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"prometheus_targets": prometheus_targets}
