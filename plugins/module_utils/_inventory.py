# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the inventory contract (docs: DESIGN.md 'Inventory contract').

Pure Python: takes group membership and per-host variables, returns every
problem found (each says what was expected, what was found and what to do) and
the cluster plan when there is none.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

_STRING_TYPES = (str,)
# a number given as text (-e KEY=VALUE): shown as it was typed
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def _ip(value):
    try:
        return ipaddress.ip_address("%s" % value)
    except ValueError:
        return None


def _net(value):
    try:
        return ipaddress.ip_network("%s" % value, strict=False)
    except ValueError:
        return None


def outside_cluster(play_hosts, cluster_hosts, head_group, worker_group):
    """Problems for the hosts a play runs on that are neither the head nor a worker: every phase
    would treat such a host as a worker (a Ray worker, an engine rank on it)."""
    cluster = set(cluster_hosts)
    stray = [h for h in play_hosts or [] if h not in cluster]
    if not stray:
        return []
    return ["the play runs on %s, %s neither the head (sparkops_head_group: %s) nor a worker "
            "(sparkops_worker_group: %s): run the deploy on the cluster's hosts only (its playbooks "
            "do: sparkops_cluster_group), or put %s into one of those groups"
            % (", ".join(stray), "which is" if len(stray) == 1 else "which are", head_group, worker_group,
               "it" if len(stray) == 1 else "them")]


def shared_facts(owners):
    """Problems when hosts of the play share one set of facts. Each host set sparkops_fact_owner
    to its own name, in its facts and its variables (a cacheable set_fact); a host that reads
    another's name there shares that host's facts. ansible-core 2.21 does this to the hosts of a
    run_once task that ran before they had facts of their own: it hands them one dict, and every
    fact set later on one of them lands on all (ansible/ansible#87415 reports the symptom).
    `owners` is {host: {"facts": name or None, "variables": name or None}}; None: not set."""
    wrong = []
    for host in sorted(owners):
        for where in ("facts", "variables"):
            seen = owners[host].get(where)
            if seen is not None and seen != host:
                wrong.append("%s reads %s's (sparkops_fact_owner in its %s)" % (host, seen, where))
    if not wrong:
        return []
    return ["the hosts of this play share one set of facts: %s. ansible-core 2.21 does this to the hosts "
            "of a run_once task that ran before they had facts of their own, and every phase would then "
            "read another host's addresses and GPUs. Run the collection's playbooks (their first play gives "
            "each host facts of its own), or start your play with a task that sets a cacheable fact on "
            "every host (ansible.builtin.set_fact with cacheable: true, not run_once) before its first "
            "run_once task" % "; ".join(wrong)]


def check_inventory(groups, hostvars, head_group="llm_head", worker_group="llm_workers",
                    head_host=None, worker_hosts=None, model_path=None, candidates=None,
                    fabric_subnet=None, require_model=True, require_candidates=True):
    """Return (problems, plan).

    groups: {group: [hosts]}; hostvars: {host: {fabric_address?, fabric_subnet?}}.
    head_host / worker_hosts: the hosts chosen (by default the groups' members); a head
    group with more than one host is a problem even then.
    """
    problems = []
    known = set(hostvars)

    heads = list(groups.get(head_group) or [])
    if len(heads) > 1:
        problems.append("inventory group %r has %d hosts (%s): expected exactly one head; "
                        "keep one there and move the others to %s"
                        % (head_group, len(heads), ", ".join(heads), worker_group))
    head = head_host or (heads[0] if len(heads) == 1 else None)
    if head_host and head_host not in known:
        problems.append("sparkops_head_host is %r, which is not a host of this inventory: "
                        "expected one of %s" % (head_host, ", ".join(sorted(known)) or "none"))
        head = None
    elif not head_host and not heads:
        problems.append("inventory group %r is missing or empty: expected exactly one host "
                        "(the Ray head); put one host under %s (or set sparkops_head_host)"
                        % (head_group, head_group))

    if worker_hosts is None:
        workers = list(groups.get(worker_group) or [])
    else:
        workers = list(worker_hosts)
        for w in workers:
            if w not in known:
                problems.append("sparkops_worker_hosts names %r, which is not a host of this "
                                "inventory" % w)
    if head and head in workers:
        problems.append("host %r is both the head and a worker: remove it from %s"
                        % (head, worker_group))
    if len(set(workers)) != len(workers):
        problems.append("sparkops_worker_hosts lists a host twice: %s" % ", ".join(workers))

    hosts = ([head] if head else []) + [w for w in workers if w != head]
    plan_hosts = {}
    seen_addresses = {}
    default_net = _net(fabric_subnet) if fabric_subnet else None
    if fabric_subnet and default_net is None:
        problems.append("sparkops_fabric_subnet %r is not a network: expected CIDR such as "
                        "192.168.100.0/24" % (fabric_subnet,))
    for h in hosts:
        hv = hostvars.get(h) or {}
        address = hv.get("fabric_address")
        subnet = hv.get("fabric_subnet") or fabric_subnet
        entry = {"fabric_address": None, "fabric_subnet": None}
        if address:
            ip = _ip(address)
            if ip is None:
                problems.append("host %s: fabric_address %r is not an IP address: expected the "
                                "address of its fabric (RoCE) interface, e.g. 192.168.100.10"
                                % (h, address))
            else:
                entry["fabric_address"] = str(ip)
                if str(ip) in seen_addresses:
                    problems.append("hosts %s and %s have the same fabric_address %s: each "
                                    "host needs its own" % (seen_addresses[str(ip)], h, ip))
                seen_addresses[str(ip)] = h
        if subnet:
            net = _net(subnet)
            if net is None:
                problems.append("host %s: fabric_subnet %r is not a network: expected CIDR "
                                "such as 192.168.100.0/24" % (h, subnet))
            else:
                entry["fabric_subnet"] = str(net)
                if entry["fabric_address"] and ipaddress.ip_address(entry["fabric_address"]) not in net:
                    problems.append("host %s: fabric_address %s is outside fabric_subnet %s: fix "
                                    "one of them" % (h, entry["fabric_address"], net))
        if not address and not subnet:
            problems.append("host %s has neither fabric_address nor fabric_subnet: set "
                            "fabric_address (e.g. 192.168.100.10) on the host, or "
                            "sparkops_fabric_subnet (e.g. 192.168.100.0/24) for all" % h)
        plan_hosts[h] = entry

    if require_model:
        if not model_path or not isinstance(model_path, _STRING_TYPES):
            problems.append("sparkops_model_path is not set: expected the model directory on "
                            "the hosts (the one holding config.json), e.g. "
                            "/models/Qwen3.5-122B-A10B-FP8")
        elif not model_path.startswith("/"):
            problems.append("sparkops_model_path %r is not an absolute path: expected e.g. "
                            "/models/Qwen3.5-122B-A10B-FP8" % model_path)
    if require_candidates:
        if not isinstance(candidates, list) or not candidates:
            problems.append("sparkops_engine_candidates is empty: expected a list of engine "
                            "images to try, preferred first (e.g. a vLLM and an SGLang image)")
        else:
            for c in candidates:
                if not isinstance(c, _STRING_TYPES) or not c.strip():
                    problems.append("sparkops_engine_candidates holds %r: expected image "
                                    "references such as nvcr.io/nvidia/vllm:26.01-py3" % (c,))

    plan = {"head": head, "workers": [w for w in workers if w != head], "hosts": plan_hosts,
            "size": len(hosts)}
    return problems, plan


def bad_waits(waits):
    """Each wait (seconds, by its variable's name) that is not a whole number 0 or more: one
    problem each. None is unset (the role's default applies). A negative wait ended in a message
    such as "did not serve within -5 s" only when that wait came - after the stop, or in the
    rollback."""
    problems = []
    for name in sorted(waits):
        value = waits[name]
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        try:
            ok = not isinstance(value, (bool, float)) and int(str(value).strip()) >= 0
        except ValueError:
            ok = False
        if not ok:
            found = waits[name]
            shown = found if isinstance(found, _STRING_TYPES) and _NUMBER.match(found.strip()) else repr(found)
            problems.append("%s is %s: expected whole seconds, 0 or more (0 looks once and does not wait) - "
                            "set it to how long to wait, or drop it for its default" % (name, shown))
    return problems


def format_problems(problems):
    return "inventory check found %d problem%s:\n- %s" % (
        len(problems), "" if len(problems) == 1 else "s", "\n- ".join(problems))
