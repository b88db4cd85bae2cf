# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a host's GPU state, shared by the modules that need it.

The one place that runs nvidia-smi and reads /proc for the modules; it takes the module
object for get_bin_path/run_command (no AnsibleModule import here). Parsing and decisions
stay in _gpu.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.sparkops.inference.plugins.module_utils._docker import C_LOCALE, Docker  # noqa: F401
from ansible_collections.sparkops.inference.plugins.module_utils._files import read_file
from ansible_collections.sparkops.inference.plugins.module_utils._gpu import (
    GpuParseError,
    gpu_summary,
    parse_docker_ps,
    parse_meminfo,
    parse_nvidia_smi_xml,
)

NVIDIA_SMI_DIRS = ["/usr/local/nvidia/bin", "/usr/lib/wsl/lib", "/opt/nvidia/bin"]


def find_nvidia_smi(module, path, extra_dirs=None):
    """(path, None) or (None, what was looked for)."""
    dirs = NVIDIA_SMI_DIRS if extra_dirs is None else extra_dirs
    if path:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return None, "nvidia_smi_path %s is not an executable file" % path
        return path, None
    found = module.get_bin_path("nvidia-smi", opt_dirs=dirs)
    if found:
        return found, None
    return None, ("nvidia-smi not found on PATH (%s) nor in %s; install the NVIDIA driver "
                  "utilities, set nvidia_smi_path, or set require_gpu: false on hosts without "
                  "a GPU" % (os.environ.get("PATH", ""), ", ".join(dirs)))


def container_names(module, docker_cli):
    docker = Docker(module, docker_cli, required=False)
    if not docker.bin:
        return {}
    rc, out, dummy = docker.run(["ps", "--no-trunc", "--format", "{{.ID}} {{.Names}}"])
    return parse_docker_ps(out) if rc == 0 else {}


def read_gpu_facts(module, nvidia_smi_path=None, docker_cli="docker", extra_dirs=None):
    """The sparkops_gpu facts of this host, and the reason GPUs could not be read (or None).

    Raises GpuParseError when /proc/meminfo cannot be read.
    """
    meminfo = parse_meminfo(read_file("/proc/meminfo") or "")
    report = {"driver_version": None, "cuda_version": None, "gpus": [], "processes": []}
    smi, error = find_nvidia_smi(module, nvidia_smi_path, extra_dirs)
    if smi:
        rc, out, err = module.run_command([smi, "-q", "-x"], environ_update=C_LOCALE)
        if rc != 0:
            error = "%s -q -x failed (exit %d): %s" % (smi, rc, (err or out).strip()[-500:])
        else:
            try:
                report = parse_nvidia_smi_xml(out)
            except GpuParseError as exc:
                error = "%s -q -x: %s" % (smi, exc)
    pid_cgroups = {}
    for proc in report["processes"]:
        text = read_file("/proc/%d/cgroup" % proc["pid"])
        if text is not None:
            pid_cgroups[proc["pid"]] = text
    names = container_names(module, docker_cli) if pid_cgroups else {}
    facts = gpu_summary(report, meminfo, containers=names, pid_cgroups=pid_cgroups)
    facts["source"] = None if error else "%s -q -x" % smi
    if error:
        facts["error"] = error
    return facts, error, pid_cgroups
