# -*- coding: utf-8 -*-
# The re-run check's verdict (module_utils/_rerun, through the filters unchanged.yml calls), over
# what deploy_record in compare mode returns on the lab's hosts.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

from ansible_collections.sparkops.inference.plugins.filter.rerun import collection_identity, rerun_reasons, rerun_summary

HOSTS = ["spark1", "spark2"]
SAME = {"recorded_at": "2026-12-06T12:00:00+0000", "lines": []}


def test_every_host_as_recorded_and_the_engine_answering_skips_the_phases():
    hostvars = {"spark1": {"deploy_check_record": dict(SAME, completion=" from 2 Ray actors")},
                "spark2": {"deploy_check_record": SAME}}
    assert rerun_reasons(HOSTS, hostvars, asked=True, head="spark1") == []
    assert rerun_summary([], "2026-12-06T12:00:00+0000") == (
        "the cluster is as the last deploy (2026-12-06T12:00:00+0000) left it, with the same inputs, nothing to stop "
        "and the model answering: nothing to change, the phases are skipped (-e deploy_fast_rerun=false runs them all)")


def test_each_difference_is_named_with_its_host_in_play_order():
    hostvars = {"spark1": {"deploy_check_record": dict(SAME, completion="x", lines=["inputs changed since the deploy"])},
                "spark2": {"deploy_check_record": dict(
                    SAME, lines=["container sparkops-ray-worker: not running", "would stop old-vllm"])}}
    found = rerun_reasons(HOSTS, hostvars, asked=True, head="spark1")
    assert found == ["spark1: inputs changed since the deploy", "spark2: container sparkops-ray-worker: not running",
                     "spark2: would stop old-vllm"]
    assert rerun_summary(found) == "full deploy: " + "; ".join(found)


def test_an_engine_that_was_not_asked_is_a_reason_and_a_check_that_did_not_run_says_so():
    hostvars = {"spark1": {"deploy_check_record": SAME}, "spark2": {"deploy_check_record": SAME}}
    assert rerun_reasons(HOSTS, hostvars, asked=True, head="spark1") == [
        "spark1: the engine was not asked for a completion"]
    # not asked (check mode, --tags, a lock document...): hostvars are not even read
    assert rerun_reasons(HOSTS, {}, asked=False, head="spark1") == ["not asked"]


def test_a_long_list_of_reasons_is_cut_at_a_word():
    found = ["spark%d: container sparkops-model-server: spec label changed" % i for i in range(60)]
    text = rerun_summary(found)
    assert text.startswith("full deploy: spark0: container") and text.endswith("...")
    assert len(text) <= len("full deploy: ") + 1500


def test_the_collections_build_is_named_by_its_manifest_else_its_galaxy_yml(tmp_path):
    """An installed collection (MANIFEST.json: it names FILES.json's checksum, so any file changes it)
    or a checkout (galaxy.yml); an upgrade changes the deploy's digest, so its first deploy runs every phase."""
    role = tmp_path / "roles" / "deploy"
    role.mkdir(parents=True)
    assert collection_identity(str(role)) == ""
    (tmp_path / "galaxy.yml").write_text("version: 0.3.0\n")
    checkout = collection_identity(str(role))
    assert checkout == "galaxy.yml:" + hashlib.sha256(b"version: 0.3.0\n").hexdigest()
    (tmp_path / "MANIFEST.json").write_text('{"file_manifest_file": {"chksum_sha256": "aa"}}')
    installed = collection_identity(str(role))
    assert installed.startswith("MANIFEST.json:") and installed != checkout
    (tmp_path / "MANIFEST.json").write_text('{"file_manifest_file": {"chksum_sha256": "bb"}}')  # a file changed
    assert collection_identity(str(role) + "/") not in ("", installed)
