# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One deploy at a time: the cluster's lock on the head host (pure logic).

The lock is a small JSON document: who holds it (user, controller host, process), which run
(run id, playbook) and since when. A run takes it when there is none, keeps it when it holds it
already (a task repeated in the same run), takes it over from a holder older than stale_after
seconds or when told to, and otherwise fails naming the holder.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

LOCK_VERSION = 1
FIELDS = ("run_id", "user", "controller", "playbook", "since")


class LockError(Exception):
    pass


def new_lock(owner, now):
    lock = dict((k, owner.get(k)) for k in FIELDS if k != "since")
    lock.update(version=LOCK_VERSION, since=now)
    return lock


def parse_lock(text, path):
    """The lock document, or raise LockError naming the file when it is not one of ours."""
    try:
        lock = json.loads(text)
    except ValueError as exc:
        raise LockError("%s is not a readable deploy lock (%s): look at it; remove it when no deploy "
                        "runs, or take it over (sparkops_lock_take_over=true)" % (path, exc))
    if not isinstance(lock, dict) or lock.get("version") != LOCK_VERSION or not lock.get("run_id"):
        raise LockError("%s is not a sparkops deploy lock (version %d): look at it; remove it when no "
                        "deploy runs, or take it over (sparkops_lock_take_over=true)" % (path, LOCK_VERSION))
    return lock


def describe(lock, now=None):
    """'root@ctl-1 (deploy.yml, run 20261201T110203-4242) since 2026-12-01T11:02:03Z, 5 min ago'"""
    age = ""
    if now is not None and isinstance(lock.get("since"), (int, float)):
        age = ", %s ago" % _ago(now - lock["since"])
    since = lock.get("since")
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since)) if isinstance(since, (int, float)) else "?"
    return "%s@%s (%s, run %s) since %s%s" % (
        lock.get("user") or "?", lock.get("controller") or "?", lock.get("playbook") or "?",
        lock.get("run_id"), when, age)


def _ago(seconds):
    seconds = max(0, int(seconds))
    if seconds < 120:
        return "%d s" % seconds
    if seconds < 7200:
        return "%d min" % (seconds // 60)
    return "%.1f h" % (seconds / 3600.0)


def decide(current, run_id, now, stale_after, take_over):
    """What to do with the lock: ('take', None) no lock; ('ours', None) this run holds it;
    ('take_over', why) a dead or explicit take-over; ('held', message) someone else holds it."""
    if current is None:
        return "take", None
    if current.get("run_id") == run_id:
        return "ours", None
    age = now - current["since"] if isinstance(current.get("since"), (int, float)) else None
    if take_over:
        return "take_over", "taken over on request (sparkops_lock_take_over) from %s" % describe(current, now)
    if stale_after and age is not None and age > stale_after:
        return "take_over", ("taken over from %s: older than sparkops_lock_stale_after (%d s), so taken "
                             "for a dead run" % (describe(current, now), stale_after))
    return "held", ("another deploy holds this cluster: %s. Wait until it ends. If that run is dead "
                    "(its controller was killed or lost), run again with -e sparkops_lock_take_over=true; "
                    "a lock older than %d s (sparkops_lock_stale_after) is taken over by itself"
                    % (describe(current, now), stale_after))
