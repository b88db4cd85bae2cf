# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What holds GPU / unified memory on this host, and the commands that stop and start it.

The I/O half of the GPU memory phase, shared by the modules that need it: gpu_memory (which
stops and restores) and deploy_record (whose compare asks what the phase would stop). It takes
the module object for get_bin_path/run_command/fail_json (no AnsibleModule import here); the
decisions stay in _memory.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.sparkops.inference.plugins.module_utils._docker import C_LOCALE, Docker
from ansible_collections.sparkops.inference.plugins.module_utils._gpu import GpuParseError
from ansible_collections.sparkops.inference.plugins.module_utils._host import read_gpu_facts
from ansible_collections.sparkops.inference.plugins.module_utils._memory import (
    boot_hold,
    hold_argv,
    parse_systemctl_show,
    plan_holders,
    release_argv,
    unit_gpu_mib,
)


class Host(object):
    """The docker and systemctl commands that find, stop and start what holds memory."""

    def __init__(self, module, docker_cli="docker"):
        self.module = module
        self.docker_cli = docker_cli
        self.dock = Docker(module, docker_cli, required=False)
        self.docker = self.dock.bin
        self.systemctl = module.get_bin_path("systemctl")

    def run(self, argv):
        return self.module.run_command(argv, environ_update=C_LOCALE)

    def need_docker(self):
        if not self.docker:
            self.module.fail_json(msg="the docker CLI (%s) was not found on this host, and "
                                  "containers were asked for" % self.docker_cli)

    def container(self, name):
        doc = self.dock.container(name)
        if doc is None:
            return {"name": name, "id": None, "exists": False, "running": False}
        return {"name": doc.get("Name", name).lstrip("/"), "id": doc.get("Id"), "exists": True,
                "running": bool((doc.get("State") or {}).get("Running"))}

    def compose(self, project):
        return [{"id": r["id"], "running": r["running"], "name": r["name"]} for r in
                self.dock.ps(all=True, filters=["label=com.docker.compose.project=%s" % project])]

    def unit(self, name):
        if not self.systemctl:
            return {"name": name, "exists": False, "active": False, "cgroup": None}
        dummy, out, dummy = self.run([self.systemctl, "show", "-p", "Id,LoadState,ActiveState,ControlGroup,UnitFileState",
                                      name])
        info = parse_systemctl_show(out)
        info["name"] = info["name"] or name
        return info

    def note_boot(self, holder):
        """boot_hold(): what would bring the holder back at boot (restart policy, enabled unit)."""
        if holder["kind"] == "container":
            policy = ((self.dock.container(holder["id"]) or {}).get("HostConfig") or {}).get("RestartPolicy") or {}
            name = policy.get("Name") or ""
            if name == "on-failure" and policy.get("MaximumRetryCount"):
                name += ":%d" % policy["MaximumRetryCount"]
            return boot_hold(holder, restart_policy=name)
        return boot_hold(holder, unit_enabled=self.unit(holder["name"]).get("enabled", False))

    def stop(self, holder, timeout):
        # held first: a container with restart policy "always" comes back at the next boot even
        # after `docker stop`, and an enabled unit starts at boot
        hold = hold_argv(holder, self.docker, self.systemctl)
        if hold:
            rc, out, err = self.run(hold)
            if rc != 0:
                return "could not keep %s %s down across a reboot (%s): %s" % (
                    holder["kind"], holder["name"], " ".join(hold[:-1]), (err or out).strip())
        if holder["kind"] == "container":
            argv = [self.docker, "stop", "-t", str(timeout), holder["id"]]
        else:
            argv = [self.systemctl, "stop", holder["name"]]
        t0 = time.time()
        rc, out, err = self.run(argv)
        if rc != 0:
            return "could not stop %s %s: %s" % (holder["kind"], holder["name"], (err or out).strip())
        holder["stopped_in_s"] = round(time.time() - t0, 1)
        return None

    def gone(self, entry):
        """The recorded container or unit no longer exists (removed since it was stopped)."""
        if entry["kind"] == "container":
            return bool(self.docker) and not self.container(entry.get("id") or entry["name"])["exists"] \
                and not self.container(entry["name"])["exists"]
        return bool(self.systemctl) and not self.unit(entry["name"])["exists"]

    def start(self, entry):
        if entry["kind"] == "container":
            if not self.docker:
                return "docker CLI missing"
            ref = entry.get("id") or entry["name"]
            if entry.get("id") and not self.container(entry["id"])["exists"]:
                ref = entry["name"]  # re-created under its name since: that is the service now
            entry = dict(entry, id=ref)
            argv = [self.docker, "start", ref]
        else:
            if not self.systemctl:
                return "systemctl missing"
            argv = [self.systemctl, "start", entry["name"]]
        rc, out, err = self.run(argv)
        if rc != 0:
            return (err or out).strip()
        release = release_argv(entry, self.docker, self.systemctl)
        if release:  # what brought it up at boot, given back
            rc, out, err = self.run(release)
            if rc != 0:
                return "started, but could not put back %s: %s" % (" ".join(release[:-1]), (err or out).strip())
        return None


def memory_facts(module, nvidia_smi_path, docker_cli):
    """(sparkops_gpu facts, pid -> cgroup text); fails the module when memory cannot be read."""
    try:
        facts, dummy, pid_cgroups = read_gpu_facts(module, nvidia_smi_path, docker_cli)
    except GpuParseError as exc:
        module.fail_json(msg="cannot read host memory: %s" % exc)
    return facts, pid_cgroups


def survey(module, host, p):
    """What the GPU memory phase would stop here: (facts, holders, notes). `p` holds
    gpu_memory's options: containers, compose_projects, systemd_units, stop_gpu_containers,
    exclude_containers, nvidia_smi_path, docker_cli. Changes nothing."""
    facts, pid_cgroups = memory_facts(module, p["nvidia_smi_path"], p["docker_cli"])
    if p["containers"] or p["compose_projects"] or p["stop_gpu_containers"]:
        host.need_docker()
    containers = [host.container(n) for n in p["containers"]]
    compose = dict((proj, host.compose(proj)) for proj in p["compose_projects"])
    units = [host.unit(u) for u in p["systemd_units"]]
    unit_mib = dict((u["name"], unit_gpu_mib(facts, pid_cgroups, u["cgroup"])) for u in units)
    holders, notes = plan_holders(containers, compose, units, facts, p["stop_gpu_containers"],
                                  p["exclude_containers"], unit_mib)
    return facts, holders, notes
