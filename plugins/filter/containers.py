# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container specs of module_utils/_containers as filters (roles hand the result straight
to community.docker.docker_container)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.plugin_utils._lazy import module_utils


def _wrap(name):
    def run(inputs):
        containers = module_utils("_containers")
        try:
            return getattr(containers, name)(dict(inputs))
        except containers.SpecError as exc:
            raise AnsibleFilterError(str(exc))
    run.__name__ = name
    return run


def engine_command(inputs):
    containers = module_utils("_containers")
    try:
        entrypoint, args = containers.engine_command(dict(inputs))
    except containers.SpecError as exc:
        raise AnsibleFilterError(str(exc))
    return {"entrypoint": entrypoint, "args": args}


class FilterModule(object):
    def filters(self):
        return {"ray_container": _wrap("ray_container"),
                "engine_container": _wrap("engine_container"),
                "watchdog_container": _wrap("watchdog_container"),
                "engine_command": engine_command}
