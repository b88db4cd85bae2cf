#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ray_node
short_description: Prepare one host for its Ray container, in one pass
version_added: 0.1.0
description:
  - Writes the cluster's Ray token to a root-only file (and its directory), changing it only
    when the content differs.
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
  token:
    description: The Ray token to keep in O(token_file). Not logged.
    type: str
  token_file:
    description: Where the token is kept on the host (mode 0600, owner root).
    type: path
    default: /etc/sparkops/ray-token
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
  make_dirs:
    description: Directories to create (mode 0755) when missing - bind-mount sources of the container.
    type: list
    elements: path
    default: []
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    support: full
"""

EXAMPLES = r"""
- name: Token, container survey and image check on the head
  sparkops.inference.ray_node:
    container: sparkops-ray-head
    cluster_containers: [sparkops-ray-head, sparkops-ray-worker]
    token: "{{ ray_token }}"
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
  sample: {name: sparkops-ray-head, image: "vllm:26.01", running: true, status: Up 3 hours}
stale:
  description: Other containers on the host that run C(ray start).
  returned: always
  type: list
  elements: str
token_changed:
  description: Whether the token file was (or would be) written.
  returned: always
  type: bool
ray_version:
  description: Ray version found in O(image) (only when it was checked).
  returned: when O(check_image=true) and the image was checked
  type: str
  sample: 2.60.0
"""

import hashlib
import os
import socket
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils import _cache
from ansible_collections.sparkops.inference.plugins.module_utils._ray import (
    RayParseError,
    classify_containers,
    image_ray_problem,
    parse_docker_ps_json,
)

C_LOCALE = {"LANG": "C", "LC_ALL": "C"}
VERSION_SNIPPET = "import importlib.metadata as m; print(m.version('ray'))"


def ensure_token(module, token, path):
    """Write the token root-only; return whether it changed (or would)."""
    try:
        with open(path) as f:
            current = f.read()
        st = os.stat(path)
        if current == token and (st.st_mode & 0o777) == 0o600 and st.st_uid == 0:
            return False
    except (IOError, OSError):
        pass
    if module.check_mode:
        return True
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".ray-token.")
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, token.encode("utf-8"))
        os.close(fd)
        os.chown(tmp, 0, 0)
        os.rename(tmp, path)
    except (IOError, OSError) as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        module.fail_json(msg="cannot write the Ray token to %s: %s" % (path, exc))
    return True


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
    rc, image_id, dummy = module.run_command([docker, "image", "inspect", "--format", "{{.Id}}",
                                              p["image"]], environ_update=C_LOCALE)
    image_id = image_id.strip() if rc == 0 else None
    cache = _cache.load(p["cache_file"]) if image_id else {}
    version = cache.get(image_id) if image_id else None
    if version is None:
        rc, out, err = module.run_command(
            [docker, "run", "--rm", "--network", "none", "--entrypoint", "python3", p["image"],
             "-c", VERSION_SNIPPET], environ_update=C_LOCALE)
        problem = image_ray_problem(p["image"], rc, out, err, bool(p["min_ray_version"]),
                                    p["min_ray_version"])
        if problem:
            module.fail_json(msg=problem, container=None, stale=[], token_changed=False)
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
            module.fail_json(msg=problem, container=None, stale=[], token_changed=False)
    return version


def main():
    module = AnsibleModule(
        argument_spec=dict(
            container=dict(type="str", required=True),
            cluster_containers=dict(type="list", elements="str", default=[]),
            token=dict(type="str", no_log=True),
            token_file=dict(type="path", default="/etc/sparkops/ray-token"),
            image=dict(type="str"),
            check_image=dict(type="bool", default=False),
            min_ray_version=dict(type="str", default=""),
            free_port=dict(type="str"),
            cache_file=dict(type="path", default="/var/lib/sparkops/ray-image-checks.json"),
            make_dirs=dict(type="list", elements="path", default=[]),
            env_file=dict(type="path"),
            docker_cli=dict(type="str", default="docker"),
        ),
        required_if=[("check_image", True, ["image"])],
        supports_check_mode=True,
    )
    p = module.params
    docker = module.get_bin_path(p["docker_cli"], required=True)
    result = dict(changed=False, token_changed=False)
    if p["token"]:
        result["token_changed"] = ensure_token(module, p["token"], p["token_file"])
        result["changed"] = result["token_changed"]
    result["env_file_sha256"] = None
    if p["env_file"]:
        try:
            with open(p["env_file"], "rb") as f:
                result["env_file_sha256"] = hashlib.sha256(f.read()).hexdigest()
        except (IOError, OSError):
            pass
    for directory in p["make_dirs"]:
        if not os.path.isdir(directory):
            result["changed"] = True
            if not module.check_mode:
                os.makedirs(directory, 0o755)

    rc, out, err = module.run_command([docker, "ps", "-a", "--no-trunc", "--format", "{{json .}}"],
                                      environ_update=C_LOCALE)
    if rc != 0:
        module.fail_json(msg="cannot list the containers on this host (docker ps, exit %d): %s"
                         % (rc, (err or out).strip()[-500:]))
    try:
        containers = parse_docker_ps_json(out)
    except RayParseError as exc:
        module.fail_json(msg=str(exc))
    mine, stale = classify_containers(containers, p["container"], p["cluster_containers"])
    result["container"] = mine
    result["stale"] = stale

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
