# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-host prerequisites: what is missing, and the fix for each (pure logic)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.sparkops.inference.plugins.module_utils._docker import architecture, version_tuple

# The oldest Docker engine this collection is tested with (the lab's Debian 12 docker.io, API 1.41).
MIN_DOCKER = "20.10"

# uname -m -> the platform architecture images use (linux/<this>)
docker_arch = architecture


def parse_docker_info(text):
    """``docker info --format '{{json .}}'`` -> the fields we use, or raise ValueError."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object from docker info, found %r" % text[:200])
    return {
        "server_version": data.get("ServerVersion"),
        "root_dir": data.get("DockerRootDir"),
        "runtimes": sorted((data.get("Runtimes") or {}).keys()),
        "default_runtime": data.get("DefaultRuntime"),
        "architecture": data.get("Architecture"),
        "server_errors": list(data.get("ServerErrors") or []),
    }


def evaluate(info, min_free_gib, require_gpu_runtime):
    """Return the list of problems in ``info`` (see host_prereqs for its keys)."""
    problems = []
    if not info.get("docker_cli"):
        problems.append("the docker CLI was not found on PATH: install the Docker engine "
                        "(e.g. apt-get install docker.io, or Docker CE)")
    elif info.get("docker_error"):
        problems.append("the Docker engine is not reachable (%s): start it (systemctl start "
                        "docker) and make sure this user may use it" % info["docker_error"])
    elif (info.get("docker") or {}).get("server_version") and \
            version_tuple(info["docker"]["server_version"]) < version_tuple(MIN_DOCKER):
        problems.append("the Docker engine is %s, older than %s, the oldest this collection supports: "
                        "upgrade Docker (DGX OS: apt-get install --only-upgrade docker-ce)"
                        % (info["docker"]["server_version"], MIN_DOCKER))
    if require_gpu_runtime and info.get("docker") and not info.get("gpu_runtime"):
        problems.append("no NVIDIA container runtime: Docker runtimes are %s and "
                        "nvidia-container-runtime-hook is not on PATH; install the NVIDIA "
                        "Container Toolkit (nvidia-ctk runtime configure --runtime=docker) and "
                        "restart Docker" % (", ".join(info["docker"]["runtimes"]) or "none"))
    if not info.get("python_requests"):
        problems.append("Python %s on this host lacks the 'requests' library that "
                        "community.docker needs: install it (Debian/Ubuntu: apt-get install "
                        "python3-requests)" % info.get("python", "?"))
    if "timeout" in info and not info["timeout"]:
        problems.append("coreutils' timeout is not on PATH (%s): it bounds every pull and probe; "
                        "install coreutils" % info.get("path", "?"))
    free = info.get("free_disk_gib")
    if min_free_gib and free is not None and free < min_free_gib:
        problems.append("only %.1f GiB free under %s: expected at least %s GiB for the engine "
                        "images (preflight_min_free_disk_gib); free space, e.g. docker image "
                        "prune" % (free, info.get("disk_path"), min_free_gib))
    return problems
