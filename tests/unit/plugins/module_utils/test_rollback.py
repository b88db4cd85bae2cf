# -*- coding: utf-8 -*-
# The rollback's decision and message (module_utils/_rollback, through the filters the role calls):
# each case is a state the lab's fault tests reach (tests/integration/test_27_nothing_lost.py), as
# the hosts' registered results look there.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.rollback import rollback_decision, rollback_message
from ansible_collections.sparkops.inference.plugins.module_utils import _text

HOSTS = ["spark1", "spark2"]
TOKEN = "/etc/sparkops/ray-token"
DIRS = dict(ray_token_file=TOKEN, secrets_dir="/etc/sparkops/secrets", secrets_kept_dir="/etc/sparkops/secrets.previous")
RUNS = {"container": {"running": True}}
GONE = {"container": None}


def failed(task, msg, **result):
    return {"ansible_failed_task": {"name": task}, "ansible_failed_result": dict(result, msg=msg, failed=True)}


def record(*down):
    return {"rollback_record": {"exists": True, "down": list(down)}}


def restored(*names):
    return {"ansible_facts": {"sparkops_gpu_memory": {"restored": [{"name": n} for n in names]}}}


def run(hostvars, engine, after_stop=True, restore=True, could_touch=True):
    decision = rollback_decision(HOSTS, hostvars, engine=engine, restore_on_failure=restore, after_stop=after_stop)
    text = rollback_message(HOSTS, hostvars, decision=decision, head="spark1", restore_on_failure=restore,
                            could_touch=could_touch, **DIRS)
    return decision, text


def test_memory_still_short_after_the_stop_restores_the_recorded_services_in_the_order_they_came_back():
    wait = "wait until enough is free on spark1, spark2: only 3.1 GiB free after 2 s"
    hostvars = {"spark1": dict(record("old-vllm", "embeddings-embed-1"), **failed("Stop what holds GPU memory", wait)),
                "spark2": dict(record("old-vllm", "embeddings-embed-1"), **failed("Stop what holds GPU memory", wait))}
    decision = rollback_decision(HOSTS, hostvars, engine=GONE, after_stop=True)
    assert decision == {"rolled_back": True, "kept": False, "removed": False, "untouched": False,
                        "interrupted": False, "failure": "Stop what holds GPU memory on spark1, spark2: " + wait}
    for name in HOSTS:  # what the restore task left
        hostvars[name].update(restored("embeddings-embed-1", "old-vllm"))
    assert rollback_message(HOSTS, hostvars, decision=decision, head="spark1", **DIRS) == (
        'The deploy failed at "Stop what holds GPU memory on spark1, spark2: %s". Rolled back: the engine and Ray '
        "containers were removed and what the deploy had stopped was started again (embeddings-embed-1, old-vllm)."
        % wait)


def test_a_failure_before_the_stop_on_a_serving_cluster_leaves_it_alone():
    # the record lists what an earlier good deploy stopped; the engine serves; engine_image failed
    hostvars = {"spark1": dict(record("old-vllm"), **failed("Select", "No candidate image can serve")),
                "spark2": record("old-vllm")}
    decision, text = run(hostvars, RUNS, after_stop=False, could_touch=False)
    assert not decision["rolled_back"] and decision["untouched"] and not decision["interrupted"]
    assert text == ('The deploy failed at "Select on spark1: No candidate image can serve". '
                    "Nothing was rolled back: this run stopped no service.")
    # the same, once a phase began that could have replaced it
    assert run(hostvars, RUNS, could_touch=True)[1].endswith(
        "Nothing was rolled back: the engine that served before this run is untouched and still serves.")


def test_an_engine_that_fails_where_nothing_of_ours_served_is_removed_with_what_this_run_started():
    """Nothing stopped, nothing kept (the engine phase alone from the old model, or a first deploy
    on hosts that run nothing): what this run started goes, and the message names it."""
    exited = "the engine exited during start (container sparkops-model-server, exit code 7) on spark1"
    hostvars = {"spark1": dict(record(), ray_cluster_started={"changed": True}, model_server_started={"changed": True},
                               **failed("Wait until the model is served", exited)),
                "spark2": dict(record(), ray_cluster_started={"changed": True})}
    decision = rollback_decision(HOSTS, hostvars, engine=RUNS, after_stop=False)
    assert decision["removed"] and not decision["rolled_back"] and not decision["untouched"]
    hostvars["spark1"]["rollback_removed"] = {"changed": True, "results": [
        {"item": "sparkops-ray-head", "changed": True}, {"item": "sparkops-model-server", "changed": True}]}
    hostvars["spark2"]["rollback_removed"] = {"changed": True, "results": [{"item": "sparkops-ray-worker", "changed": True}]}
    text = rollback_message(HOSTS, hostvars, decision=decision, head="spark1", **DIRS)
    assert text.endswith("Nothing was rolled back: this run stopped no service, and nothing of ours served before it. "
                         "What it started was removed (sparkops-ray-head on spark1, sparkops-model-server on spark1, "
                         "sparkops-ray-worker on spark2), so that nothing of it keeps restarting beside what runs.")
    # with restore off, nothing is touched: the failed containers stay to be looked at
    assert not rollback_decision(HOSTS, hostvars, engine=RUNS, restore_on_failure=False, after_stop=False)["removed"]
    # a run that started nothing removes nothing
    quiet = {"spark1": failed("Select", "No candidate image can serve"), "spark2": {}}
    assert not rollback_decision(HOSTS, quiet, engine=GONE, after_stop=False)["removed"]


def test_services_an_interrupted_deploy_stopped_come_back_and_the_message_says_who_stopped_them():
    hostvars = {"spark1": dict(record("old-vllm"), **failed("Select", "No candidate image can serve")),
                "spark2": record()}
    hostvars["spark1"].update(restored("old-vllm"))
    decision, text = run(hostvars, GONE, after_stop=False)
    assert decision["rolled_back"] and decision["interrupted"]
    assert text.endswith("started again (old-vllm). An earlier deploy had stopped them and was interrupted; "
                         "nothing of ours was serving.")


def test_a_kept_generation_comes_back_with_its_secrets_and_the_ray_token_that_stays_is_named():
    kept = {"rollback_previous": {"steps": ["rename sparkops-model-server-previous sparkops-model-server"]}}
    hostvars = {
        "spark1": dict(kept, model_server_started={"changed": True},
                       rollback_secrets={"changed": True}, ray_cluster_files={"changed_paths": [TOKEN]},
                       model_server_restored={"endpoint": "http://10.77.0.11:8000/v1", "models": ["qwen3.5-lab"],
                                              "seconds_to_ready": 7},
                       **failed("Wait until the model is served", "the engine serves other-name, not qwen3.5-lab")),
        "spark2": dict(rollback_secrets={"changed": True}, ray_cluster_files={"changed_paths": [TOKEN, "/x"]},
                       ray_cluster_started={"results": [{"changed": False}, {"changed": True}]})}
    decision, text = run(hostvars, RUNS)
    assert decision["rolled_back"] and decision["kept"] and not decision["untouched"]
    assert text == (
        'The deploy failed at "Wait until the model is served on spark1: the engine serves other-name, not '
        'qwen3.5-lab". Rolled back: the engine and Ray containers that served before this run were started again '
        "(they were kept stopped while the new ones started). It serves again: http://10.77.0.11:8000/v1 lists "
        "qwen3.5-lab (7 s after its start). The engine's secret files were put back as they were before this run on "
        "spark1, spark2 (the API key and Hugging Face token this run set are not in effect). The Ray token this run "
        "wrote stays in effect on spark1, spark2: the Ray containers of before were started again with it (a deploy "
        "with the token of before changes it back).")


def test_a_kept_engine_that_does_not_serve_again_in_time_is_not_said_to_serve():
    hostvars = {"spark1": dict(rollback_previous={"steps": ["rename a-previous a"]},
                               model_server_restored={"msg": "the engine did not serve within 0 s on spark1: " + "log " * 200},
                               **failed("Wait", "no")),
                "spark2": {}}
    text = run(hostvars, RUNS)[1]
    assert "But it does not serve again: the engine did not serve within 0 s on spark1: log log" in text
    assert "... - playbooks/status.yml shows what runs now; a deploy with the inputs that served before starts it " \
           "again." in text and "It serves again" not in text and "log " * 150 not in text
    hostvars["spark1"]["model_server_restored"] = {"skipped_wait": True}
    assert run(hostvars, RUNS)[1].endswith("In check mode it was not waited for.")


def test_with_restore_off_nothing_comes_back_and_the_message_says_how_to_bring_it_back():
    hostvars = {"spark1": dict(record("old-vllm"), **failed("Wait", "no")), "spark2": {}}
    decision, text = run(hostvars, GONE, restore=False)
    assert not decision["rolled_back"]
    assert text.endswith("Not rolled back (sparkops_restore_on_failure is false): the stopped services stay stopped; "
                         "teardown.yml -e sparkops_restore=true brings them back.")


def test_secret_files_that_could_not_be_put_back_are_named_with_where_they_are_kept():
    hostvars = {"spark1": dict(record("old-vllm"), rollback_secrets={"failed": True, "msg": "EIO"},
                               **failed("Wait", "no")),
                "spark2": {"rollback_secrets": {"unreachable": True}}}
    text = run(hostvars, GONE)[1]
    assert text.endswith("The engine's secret files as they were before this run could NOT be put back on spark1, "
                         "spark2: they are kept in /etc/sparkops/secrets.previous there - copy them into "
                         "/etc/sparkops/secrets and restart the engine container.")
    assert "were put back" not in text


def test_the_failure_is_the_first_failed_item_of_a_loop_with_its_stderr_cut():
    result = {"msg": "One or more items failed", "results": [
        {"changed": False, "item": "a"},
        {"failed": True, "item": "b", "msg": "non-zero return code", "stderr": "  " + "word " * 100 + "\n"},
        {"failed": True, "item": "c", "msg": "later"}]}
    hostvars = {"spark1": {}, "spark2": {"ansible_failed_task": {"name": "Pull"}, "ansible_failed_result": result}}
    text = rollback_decision(HOSTS, hostvars)["failure"]
    assert text.startswith("Pull on spark2: non-zero return code (word word ")
    assert text.endswith(" word...)") and len(text) < len("Pull on spark2: non-zero return code ()") + 300
    # none failed that the rescue could see (an unreachable host): still a sentence
    assert rollback_decision(HOSTS, {"spark1": {}, "spark2": {}})["failure"] == "? on ?: {}"


def test_the_truncation_is_jinjas():
    jinja2 = pytest.importorskip("jinja2")
    env = jinja2.Environment()
    for text in ("short", "a " * 151, "b" * 400, "one two three " * 30):
        assert _text.truncate(text, 300) == env.from_string("{{ t | truncate(300) }}").render(t=text)


def test_a_host_that_is_not_in_the_inventory_or_a_decision_that_is_not_one_is_named():
    with pytest.raises(AnsibleFilterError, match="spark9"):
        rollback_decision(["spark9"], {"spark1": {}})
    with pytest.raises(AnsibleFilterError, match="lacks failure, interrupted"):
        half = {"rolled_back": True, "kept": False, "untouched": False}
        rollback_message(HOSTS, {"spark1": {}, "spark2": {}}, decision=half, head="spark1")


def test_with_restore_off_a_kept_generation_is_not_said_to_be_started_again():
    hostvars = {"spark1": dict(rollback_previous={"steps": ["rename a-previous a"]}, **failed("Wait", "no")),
                "spark2": {}}
    decision, text = run(hostvars, RUNS, restore=False)
    assert decision["kept"] and not decision["rolled_back"]
    assert "Rolled back" not in text and "Not rolled back (sparkops_restore_on_failure is false)" in text
