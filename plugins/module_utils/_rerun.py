# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The re-run check's verdict (roles/deploy/tasks/unchanged.yml): whether a deploy has nothing to
change, from what deploy_record (mode compare) found on each host - a pure function; the filter
rerun_reasons (plugins/filter/rerun.py) calls it with the play's hostvars."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os

from ansible_collections.sparkops.inference.plugins.module_utils._text import truncate

# what says which build of this collection runs, first found wins: an installed collection's
# MANIFEST.json (it names FILES.json's checksum, which covers every file), a checkout's galaxy.yml
IDENTITY_FILES = ("MANIFEST.json", "galaxy.yml")


def reasons(asked, checks, head):
    """Why this deploy runs every phase; [] when it has nothing to change (the phases are skipped).

    asked: the check ran (deploy_fast_possible: not in check mode, a whole run, no lock document,
    ...); checks: [(host, its deploy_record compare result)] in play order - C(lines) are what
    differs there; head: the head host, whose result carries the engine's C(completion)."""
    if not asked:
        return ["not asked"]
    out = ["%s: %s" % (host, line) for host, result in checks
           for line in (result if isinstance(result, dict) else {}).get("lines") or []]
    head_result = dict(checks).get(head)
    if not out and "completion" not in (head_result if isinstance(head_result, dict) else {}):
        out.append("%s: the engine was not asked for a completion" % head)
    return out


def collection_identity(role_path):
    """Which build of this collection runs, for the deploy's inputs digest: a collection upgraded
    since the last deploy (a container's spec may have changed with it) is a change to deploy, not
    a re-run to skip. role_path: a role of this collection (its root is two levels up).
    'FILE:sha256' of the first of IDENTITY_FILES there; '' when neither is."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(role_path)))
    for name in IDENTITY_FILES:
        try:
            with open(os.path.join(root, name), "rb") as f:
                return "%s:%s" % (name, hashlib.sha256(f.read()).hexdigest())
        except (IOError, OSError):
            continue
    return ""


def summary(reasons_found, recorded_at, limit=1500):
    """What the re-run check prints: nothing to change, or the full deploy with its reasons."""
    if not reasons_found:
        return ("the cluster is as the last deploy (%s) left it, with the same inputs, nothing to stop and the model "
                "answering: nothing to change, the phases are skipped (-e deploy_fast_rerun=false runs them all)"
                % recorded_at)
    return "full deploy: " + truncate("; ".join(reasons_found), limit)
