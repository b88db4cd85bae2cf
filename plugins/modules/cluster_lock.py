#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: cluster_lock
short_description: One deploy at a time - the cluster's lock on the head host
version_added: 0.2.0
description:
  - With O(state=acquired), takes the lock file on this host (the head) for the run O(run_id),
    created atomically (C(O_EXCL)), so of two runs that start together exactly one gets it. A run
    that holds it already keeps it. A lock of another run fails at once, naming its holder (user,
    controller, playbook, run) and since when, unless it is older than O(stale_after) seconds
    or O(take_over=true) - then it is taken over and the old holder is returned.
  - With O(state=released), removes the lock when this run holds it; a lock of another run is
    left alone (and said so).
  - With O(state=read), returns the lock as it is; changes nothing.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
attributes:
  check_mode:
    support: full
    details: Reports what it would do and fails on a lock held by another run; writes nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Taking a lock this run holds, or releasing one it does not, changes nothing.
options:
  state:
    description: V(acquired) takes the lock, V(released) gives it back, V(read) reads it.
    type: str
    choices: [acquired, released, read]
    default: acquired
  path:
    description: The lock file on the host.
    type: path
    default: /var/lib/sparkops/deploy.lock
  run_id:
    description: This run's id (the same for every task of one run). Needed unless O(state=read).
    type: str
  user:
    description: Who runs it (recorded in the lock).
    type: str
    default: ""
  controller:
    description: Where it runs from (recorded in the lock).
    type: str
    default: ""
  playbook:
    description: What runs (recorded in the lock).
    type: str
    default: ""
  stale_after:
    description: A lock older than this many seconds is taken for a dead run's and taken over. V(0) never.
    type: int
    default: 14400
  take_over:
    description: Take the lock over from whoever holds it (their run is known to be dead).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Take the cluster's deploy lock
  sparkops.inference.cluster_lock:
    run_id: "{{ sparkops_run_id }}"
    user: "{{ lookup('ansible.builtin.env', 'USER') }}"
    playbook: deploy.yml

- name: Give it back
  sparkops.inference.cluster_lock:
    state: released
    run_id: "{{ sparkops_run_id }}"
"""

RETURN = r"""
lock:
  description: The lock as it is now (after this task), or null when there is none.
  returned: always
  type: dict
  sample: {run_id: 20261201T110203-4242, user: ops, controller: awx-7, playbook: deploy.yml, since: 1796130123}
holder:
  description: The lock's holder in words (who, from where, what, since when).
  returned: when there is a lock
  type: str
taken_over:
  description: Why the lock was taken over from another run, and from whom.
  returned: when it was taken over
  type: str
"""

import errno
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._files import atomic_write
from ansible_collections.sparkops.inference.plugins.module_utils._lock import (
    LockError,
    decide,
    describe,
    new_lock,
    parse_lock,
)


def read(module, path, tolerate_bad):
    try:
        with open(path) as f:
            text = f.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return None
        module.fail_json(msg="cannot read the deploy lock %s: %s" % (path, exc))
    try:
        return parse_lock(text, path)
    except LockError as exc:
        if tolerate_bad:
            return {"run_id": "(unreadable lock)", "since": None}
        module.fail_json(msg=str(exc))


def create(path, lock):
    """Create the lock only if there is none (O_EXCL); False when another run was quicker."""
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            return False
        raise
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(lock, sort_keys=True))
        f.flush()
        os.fsync(f.fileno())
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["acquired", "released", "read"], default="acquired"),
            path=dict(type="path", default="/var/lib/sparkops/deploy.lock"),
            run_id=dict(type="str"),
            user=dict(type="str", default=""),
            controller=dict(type="str", default=""),
            playbook=dict(type="str", default=""),
            stale_after=dict(type="int", default=14400),
            take_over=dict(type="bool", default=False),
        ),
        required_if=[("state", "acquired", ["run_id"]), ("state", "released", ["run_id"])],
        supports_check_mode=True,
    )
    p = module.params
    now = time.time()
    if p["state"] == "read":
        current = read(module, p["path"], True)
        module.exit_json(changed=False, lock=current, **({"holder": describe(current, now)} if current else {}))
    if p["state"] == "released":
        current = read(module, p["path"], True)
        if current is None or current.get("run_id") != p["run_id"]:
            result = dict(changed=False, lock=current)
            if current:
                result["holder"] = describe(current, now)
                module.warn("the deploy lock %s is held by %s, not by this run: left alone"
                            % (p["path"], describe(current, now)))
            module.exit_json(**result)
        if not module.check_mode:
            os.unlink(p["path"])
        module.exit_json(changed=True, lock=None)

    owner = new_lock(p, now)
    for dummy in range(3):  # a lock that appears or goes between the read and the write: again
        current = read(module, p["path"], p["take_over"])
        action, why = decide(current, p["run_id"], now, p["stale_after"], p["take_over"])
        if action == "held":
            module.fail_json(msg=why, lock=current, holder=describe(current, now))
        if action == "ours":
            module.exit_json(changed=False, lock=current, holder=describe(current, now))
        if module.check_mode:
            module.exit_json(changed=True, lock=owner, holder=describe(owner, now),
                             **({"taken_over": why} if why else {}))
        if action == "take":
            if create(p["path"], owner):
                module.exit_json(changed=True, lock=owner, holder=describe(owner, now))
            continue
        atomic_write(p["path"], json.dumps(owner, sort_keys=True))
        module.warn(why)
        module.exit_json(changed=True, lock=owner, holder=describe(owner, now), taken_over=why)
    module.fail_json(msg="the deploy lock %s kept changing under this run: another deploy is starting; "
                     "run again when it has" % p["path"])


if __name__ == "__main__":
    main()
