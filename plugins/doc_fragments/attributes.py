# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # Standard attributes of every sparkops.inference module
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  idempotent:
    description:
      - When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
"""

    # Modules that talk to the host's Docker engine through its CLI
    DOCKER = r"""
options:
  docker_cli:
    description: Docker CLI on the host (a name on PATH or a path).
    type: str
    default: docker
"""

    # Modules that return facts
    FACTS = r"""
options: {}
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
"""

    # Modules that only read (info and facts modules, controller-side checks): they change nothing
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    support: full
"""

    # Action plugins that run on the controller
    ACTIONGROUP_CONTROLLER = r"""
options: {}
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  platform:
    description: Runs on the controller only; touches no target.
    support: full
    platforms: all
"""
