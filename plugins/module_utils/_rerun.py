# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The re-run check's verdict (roles/deploy/tasks/unchanged.yml): whether a deploy has nothing to
change, from what deploy_record (mode compare) found on each host - a pure function; the filter
rerun_reasons (plugins/filter/rerun.py) calls it with the play's hostvars."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.sparkops.inference.plugins.module_utils._text import truncate


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


def summary(reasons_found, recorded_at, limit=1500):
    """What the re-run check prints: nothing to change, or the full deploy with its reasons."""
    if not reasons_found:
        return ("the cluster is as the last deploy (%s) left it, with the same inputs, nothing to stop and the model "
                "answering: nothing to change, the phases are skipped (-e deploy_fast_rerun=false runs them all)"
                % recorded_at)
    return "full deploy: " + truncate("; ".join(reasons_found), limit)
