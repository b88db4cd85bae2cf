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
    if info.get("iptables"):
        problems.append("the firewall is on (sparkops_firewall) but %s %s not on PATH (%s): install "
                        "iptables (apt-get install iptables), or turn the firewall off"
                        % (" and ".join(info["iptables"]), "is" if len(info["iptables"]) == 1 else "are",
                           info.get("path", "?")))
    free = info.get("free_disk_gib")
    if min_free_gib and free is not None and free < min_free_gib:
        problems.append("only %.1f GiB free under %s: expected at least %s GiB for the engine "
                        "images (preflight_min_free_disk_gib); free space, e.g. docker image "
                        "prune" % (free, info.get("disk_path"), min_free_gib))
    return problems


# What `docker run --gpus all` prints when the GPU path of a host is broken (Docker's and the
# NVIDIA Container Toolkit's own words), and the fix for each; the first match wins.
GPU_RUN_FAULTS = [
    ("could not select device driver", "Docker has no GPU driver registered (the NVIDIA Container Toolkit "
     "is missing or Docker was started before it was installed): install nvidia-container-toolkit, run "
     "nvidia-ctk runtime configure --runtime=docker, then systemctl restart docker"),
    ("unknown or invalid runtime name: nvidia", "Docker has no 'nvidia' runtime: run nvidia-ctk runtime "
     "configure --runtime=docker, then systemctl restart docker"),
    ("unsatisfied condition: cuda", "the image needs a newer CUDA than this host's NVIDIA driver offers: "
     "update the driver (DGX OS: apt-get upgrade, then reboot) or pick an image built for an older CUDA"),
    ("driver not loaded", "the NVIDIA kernel driver is not loaded (often after a kernel or driver update "
     "without a reboot): reboot the host, or load it (modprobe nvidia), and check with nvidia-smi"),
    ("libnvidia-ml.so", "the NVIDIA driver's libraries are missing: install the NVIDIA driver and check "
     "with nvidia-smi"),
    ("nvidia-container-cli", "the NVIDIA Container Toolkit failed to set up the GPUs: check nvidia-smi and "
     "nvidia-container-cli info on the host; reinstall nvidia-container-toolkit if they fail"),
]


def gpu_run_problem(rc, text, image, seconds):
    """The problem with a `docker run --gpus all IMAGE true` that ended with rc and printed
    text, or None when it worked."""
    if rc == 0:
        return None
    said = " ".join((text or "").split())
    if rc in (124, 137):
        return ("docker run --gpus all %s did not finish within %d s: Docker or the NVIDIA Container "
                "Toolkit hangs; check journalctl -u docker and nvidia-smi" % (image, seconds))
    for needle, fix in GPU_RUN_FAULTS:
        if needle in said:
            return "docker run --gpus all %s failed: %s. Docker said: %s" % (image, fix, said[-400:])
    return ("docker run --gpus all %s failed (exit %d): %s. Fix what Docker says, then run again"
            % (image, rc, said[-400:] or "no output"))
