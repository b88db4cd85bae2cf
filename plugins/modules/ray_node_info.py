#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ray_node_info
short_description: Survey one host for its Ray container, changing nothing
version_added: 0.2.0
description:
  - Changes nothing on the host (the token and directories are written by
    M(sparkops.inference.host_files)); replaces C(ray_node) of 0.1, which also wrote them.
  - Surveys the host's containers - the state of this role's Ray container (running, image),
    and any other container running C(ray start) that would register the host twice (left by a
    hand-run recipe or an earlier tool).
  - With O(check_image=true) (the head), checks that O(image) carries Ray, new enough for token
    authentication when O(min_ray_version) is set, by asking Python inside the image for Ray's
    version (C(importlib.metadata), Ray is not imported). Skipped when this role's container
    already runs that image.
  - Starts nothing; the containers are started by C(community.docker.docker_container).
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.read_only
  - sparkops.inference.attributes.docker
options:
  container:
    description: Name of this host's Ray container (the head's or a worker's).
    type: str
    required: true
  cluster_containers:
    description: Names of all of this role's Ray containers (never reported as stale).
    type: list
    elements: str
    default: []
  kept_containers:
    description:
      - Names whose kept generation (C(NAME-previous), M(sparkops.inference.container_generation))
        is looked for; the ones found are returned as RV(kept).
    type: list
    elements: str
    default: []
    version_added: 0.2.0
  look_for:
    description:
      - Names of other containers of ours whose presence on this host is returned as RV(present)
        (read from the same C(docker ps -a) as everything else - the watchdog's agent, which a deploy
        removes only where one exists).
    type: list
    elements: str
    default: []
    version_added: 0.3.0
  image:
    description: The image the Ray container is to run.
    type: str
  check_image:
    description: Check that O(image) carries Ray (and a new enough one).
    type: bool
    default: false
  min_ray_version:
    description: Lowest Ray version accepted by O(check_image); empty accepts any.
    type: str
    default: ""
  cache_file:
    description:
      - Where the Ray versions found in images are kept, by image id, so an image is asked once.
    type: path
    default: /var/lib/sparkops/ray-image-checks.json
  free_port:
    description:
      - C(address:port) that must be free (nothing listening) before this host's Ray container
        starts - the head's GCS port. Checked only when this role's container is not running.
    type: str
  env_file:
    description:
      - The fabric environment file the container reads; its SHA-256 is returned (null when the
        file does not exist), so the container's spec is the same whether or not the fabric facts
        were gathered in this run.
    type: path
"""

EXAMPLES = r"""
- name: Container survey and image check on the head
  sparkops.inference.ray_node_info:
    container: sparkops-ray-head
    cluster_containers: [sparkops-ray-head, sparkops-ray-worker]
    image: nvcr.io/nvidia/vllm:26.01-py3
    check_image: true
    min_ray_version: "2.52.0"
"""

RETURN = r"""
env_file_sha256:
  description: SHA-256 of O(env_file), null when it does not exist.
  returned: always
  type: str
container:
  description: This host's Ray container as it is now, or null when there is none.
  returned: always
  type: dict
  sample: {name: sparkops-ray-head, image: "vllm:26.01", running: true, status: Up 3 hours, restart_policy: unless-stopped}
kept:
  description: The kept generation's containers on this host (C(NAME-previous) of O(kept_containers)).
  returned: always
  type: list
  elements: str
  version_added: 0.2.0
displaced:
  description:
    - The cluster's containers of the other role on this host (O(cluster_containers) other than
      O(container)), e.g. a worker container on the host that is the head now.
  returned: always
  type: list
  elements: str
  version_added: 0.2.0
present:
  description: The names of O(look_for) that exist on this host (running or not).
  returned: always
  type: list
  elements: str
  version_added: 0.3.0
stale:
  description: Other containers on the host that run C(ray start).
  returned: always
  type: list
  elements: str
ray_version:
  description: Ray version found in O(image) (only when it was checked).
  returned: when O(check_image=true) and the image was checked
  type: str
  sample: 2.60.0
"""

import hashlib
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._generation import previous
from ansible_collections.sparkops.inference.plugins.module_utils import _cache
from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker
from ansible_collections.sparkops.inference.plugins.module_utils._ray import (
    classify_containers,
    container_rows,
    image_ray_problem,
)

VERSION_SNIPPET = "import importlib.metadata as m; print(m.version('ray'))"


def port_in_use(address, port):
    try:
        conn = socket.create_connection((address, port), timeout=1)
    except (IOError, OSError):
        return False
    conn.close()
    return True


def image_ray_version(module, docker, p):
    """Ray's version in the image, from a cache keyed by image id (an image's content never
    changes under its id) or by asking python3 inside it; fails when it cannot do the job."""
    image_id = docker.image_id(p["image"])
    cache = _cache.load(p["cache_file"]) if image_id else {}
    version = cache.get(image_id) if image_id else None
    if version is None:
        rc, out, err = docker.run(["run", "--rm", "--network", "none", "--entrypoint", "python3", p["image"],
                                   "-c", VERSION_SNIPPET])
        problem = image_ray_problem(p["image"], rc, out, err, bool(p["min_ray_version"]),
                                    p["min_ray_version"])
        if problem:
            module.fail_json(msg=problem, container=None, stale=[])
        version = out.strip()
        if image_id and not module.check_mode:
            cache[image_id] = version
            problem = _cache.save(p["cache_file"], cache)
            if problem:
                module.warn(problem)
    else:
        problem = image_ray_problem(p["image"], 0, version, "", bool(p["min_ray_version"]),
                                    p["min_ray_version"])
        if problem:
            module.fail_json(msg=problem, container=None, stale=[])
    return version


def main():
    module = AnsibleModule(
        argument_spec=dict(
            container=dict(type="str", required=True),
            cluster_containers=dict(type="list", elements="str", default=[]),
            kept_containers=dict(type="list", elements="str", default=[]),
            look_for=dict(type="list", elements="str", default=[]),
            image=dict(type="str"),
            check_image=dict(type="bool", default=False),
            min_ray_version=dict(type="str", default=""),
            free_port=dict(type="str"),
            cache_file=dict(type="path", default="/var/lib/sparkops/ray-image-checks.json"),
            env_file=dict(type="path"),
            docker_cli=dict(type="str", default="docker"),
        ),
        required_if=[("check_image", True, ["image"])],
        supports_check_mode=True,
    )
    p = module.params
    docker = Docker(module, p["docker_cli"])
    result = dict(changed=False)
    result["env_file_sha256"] = None
    if p["env_file"]:
        try:
            with open(p["env_file"], "rb") as f:
                result["env_file_sha256"] = hashlib.sha256(f.read()).hexdigest()
        except (IOError, OSError):
            pass
    containers = container_rows(docker.ps(all=True))
    mine, stale, displaced = classify_containers(containers, p["container"], p["cluster_containers"])
    if mine is not None:
        # a policy changed in place (docker update) leaves the spec label as it was: the role puts it back
        rc, out, dummy = docker.run(["container", "inspect", "--format", "{{.HostConfig.RestartPolicy.Name}}",
                                     mine["name"]])
        mine["restart_policy"] = out.strip() if rc == 0 and out.strip() else None
    result["container"] = mine
    result["stale"] = stale
    result["displaced"] = displaced
    names = set(c["name"] for c in containers)
    result["kept"] = [previous(n) for n in p["kept_containers"] if previous(n) in names]
    result["present"] = [n for n in p["look_for"] if n in names]

    running = mine is not None and mine["running"]
    if p["free_port"] and not running:
        address, dummy, port = p["free_port"].rpartition(":")
        if port_in_use(address, int(port)):
            module.fail_json(msg="port %s on %s is already in use by another process, so the Ray "
                             "head cannot start there: stop that process (ss -ltnp 'sport = :%s' "
                             "shows it), or set ray_cluster_gcs_port" % (port, address, port),
                             **result)
    current = running and mine["image"] == p["image"]
    if p["check_image"] and not current:
        result["ray_version"] = image_ray_version(module, docker, p)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
