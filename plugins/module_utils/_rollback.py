# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""After a failed deploy: whether to roll back, to what, and what the run says - pure functions
over what each host's tasks registered (roles/rollback gathers, acts and prints; no host and no
Ansible here). The filters rollback_decision and rollback_message (plugins/filter/rollback.py)
call them with the play's hostvars.

What is read of each host (its variables; absent keys count as nothing):

- rollback_record: gpu_memory state=recorded - C(down), the recorded services that do not run now;
- rollback_previous: container_generation state=restored in check mode - C(steps), a generation of
  ours kept stopped (``*-previous``) while this run started new containers;
- ray_cluster_started, model_server_started: this run started a Ray container or the engine;
- ansible_failed_task, ansible_failed_result: the host failed (set in the rescue);
- rollback_secrets: host_files kept=restore - changed (the engine's secret files put back), failed,
  unreachable;
- ray_cluster_files: C(changed_paths) - the Ray token file among them;
- ansible_facts.sparkops_gpu_memory.restored: the services a restore started again;
- model_server_restored (the head's): the kept engine serving again, or why it does not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.sparkops.inference.plugins.module_utils._text import truncate

# what each host's variables give the decision and the message (the filters read only these)
HOST_KEYS = ("rollback_record", "rollback_previous", "ray_cluster_started", "model_server_started",
             "ansible_failed_task", "ansible_failed_result", "rollback_secrets", "ray_cluster_files",
             "ansible_facts", "model_server_restored", "rollback_removed")


def changed(result):
    """Ansible's `changed` test on a registered result (a loop's: any item changed)."""
    if not isinstance(result, dict):
        return False
    if "changed" in result:
        return bool(result["changed"])
    items = result.get("results")
    return isinstance(items, list) and any(isinstance(i, dict) and i.get("changed") for i in items)


def _dict(value):
    return value if isinstance(value, dict) else {}


def failure(hosts):
    """'TASK on HOSTS: MESSAGE (stderr)' from the hosts that failed ([(name, vars)], play order):
    the first one's task and result; of a loop's result, its first failed item."""
    failed = [(name, v) for name, v in hosts if "ansible_failed_task" in v]
    first = failed[0][1] if failed else {}
    result = _dict(first.get("ansible_failed_result"))
    items = [i for i in result.get("results") or [] if isinstance(i, dict) and i.get("failed")]
    item = items[0] if items else result
    text = "%s on %s: %s" % (_dict(first.get("ansible_failed_task")).get("name", "?"),
                             ", ".join(name for name, dummy in failed) or "?",
                             item["msg"] if "msg" in item else str(item))
    stderr = str(item.get("stderr") or "").strip()
    return text + (" (%s)" % truncate(stderr, 300) if item.get("stderr") else "")


def decide(hosts, engine, restore_on_failure, after_stop):
    """What the rollback does.

    hosts: [(name, vars)] in play order; engine: serve_check's precheck on the head (its
    C(container.running)); restore_on_failure: sparkops_restore_on_failure; after_stop: the deploy
    reached gpu_memory. Returns rolled_back (roll back at all), kept (to the generation that
    served before, else to the recorded services), untouched (an engine this run did not touch
    still runs: left alone), interrupted (what the records list was stopped by an earlier,
    interrupted deploy), removed (nothing to roll back to, and this run started an engine or Ray
    containers of its own: the role removes them, so that an engine that never served does not keep
    restarting beside what runs) and failure (the failed task, hosts and message)."""
    listed = [s for dummy, v in hosts for s in _dict(v.get("rollback_record")).get("down") or []]
    kept = any(_dict(v.get("rollback_previous")).get("steps") for dummy, v in hosts)
    engine_runs = bool(_dict(_dict(engine).get("container")).get("running"))
    touched = kept or any(changed(v.get("ray_cluster_started")) or changed(v.get("model_server_started"))
                          for dummy, v in hosts)
    untouched = engine_runs and not touched
    rolled_back = bool(restore_on_failure) and (kept or bool(listed)) and not untouched
    return {
        "rolled_back": rolled_back,
        "kept": kept,
        "removed": bool(restore_on_failure) and touched and not kept and not rolled_back,
        "untouched": untouched,
        "interrupted": not after_stop and bool(listed) and not engine_runs,
        "failure": failure(hosts),
    }


def serving_again(restored):
    """What the head's wait for the kept engine found (model_server_restored)."""
    restored = _dict(restored)
    if "seconds_to_ready" in restored:
        return "It serves again: %s lists %s (%s s after its start)." % (
            restored.get("endpoint"), ", ".join(restored.get("models") or []), restored["seconds_to_ready"])
    if restored.get("skipped_wait"):
        return "In check mode it was not waited for."
    return ("But it does not serve again: %s - playbooks/status.yml shows what runs now; a deploy with the inputs "
            "that served before starts it again." % truncate(str(restored.get("msg", "it was not waited for")), 600))


def message(hosts, decision, head, restore_on_failure, could_touch, ray_token_file, secrets_dir, secrets_kept_dir):
    """The rollback's fail message: the failure, what was rolled back (or why nothing was), the
    engine's secrets put back (or not), the Ray token that stays. hosts: [(name, vars)] after the
    rollback's tasks ran; decision: decide()'s; head: the head host's name."""
    views = dict(hosts)
    if decision["rolled_back"] and decision["kept"]:
        done = ("Rolled back: the engine and Ray containers that served before this run were started again (they were "
                "kept stopped while the new ones started). "
                + serving_again(_dict(views.get(head)).get("model_server_restored")))
    elif decision["rolled_back"]:
        restored = []
        for dummy, v in hosts:
            for entry in _dict(_dict(v.get("ansible_facts")).get("sparkops_gpu_memory")).get("restored") or []:
                if entry.get("name") not in restored:
                    restored.append(entry.get("name"))
        done = ("Rolled back: the engine and Ray containers were removed and what the deploy had stopped was started "
                "again (%s)." % ", ".join(restored)
                + (" An earlier deploy had stopped them and was interrupted; nothing of ours was serving."
                   if decision["interrupted"] else ""))
    elif decision["untouched"] and could_touch:
        done = "Nothing was rolled back: the engine that served before this run is untouched and still serves."
    elif decision.get("removed"):
        gone = ["%s on %s" % (item.get("item"), name) for name, v in hosts
                for item in _dict(v.get("rollback_removed")).get("results") or [] if changed(item)]
        done = ("Nothing was rolled back: this run stopped no service, and nothing of ours served before it. What it "
                "started was removed (%s), so that nothing of it keeps restarting beside what runs."
                % (", ".join(gone) or "nothing was left"))
    elif restore_on_failure:
        done = "Nothing was rolled back: this run stopped no service."
    else:
        done = ("Not rolled back (sparkops_restore_on_failure is false): the stopped services stay stopped; "
                "teardown.yml -e sparkops_restore=true brings them back.")
    text = 'The deploy failed at "%s". %s' % (decision["failure"], done)
    secrets = [(name, _dict(v.get("rollback_secrets"))) for name, v in hosts if "rollback_secrets" in v]
    put_back = [name for name, s in secrets if changed(s)]
    if put_back:
        text += (" The engine's secret files were put back as they were before this run on %s (the API key and "
                 "Hugging Face token this run set are not in effect)." % ", ".join(put_back))
    token = [name for name, v in hosts
             if ray_token_file in (_dict(v.get("ray_cluster_files")).get("changed_paths") or [])]
    if decision["kept"] and token:
        text += (" The Ray token this run wrote stays in effect on %s: the Ray containers of before were started "
                 "again with it (a deploy with the token of before changes it back)." % ", ".join(token))
    not_back = [name for name, s in secrets if s.get("failed")] + [name for name, s in secrets if s.get("unreachable")]
    if not_back:
        text += (" The engine's secret files as they were before this run could NOT be put back on %s: they are kept "
                 "in %s there - copy them into %s and restart the engine container."
                 % (", ".join(not_back), secrets_kept_dir, secrets_dir))
    return text
