# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.sparkops.inference.plugins.module_utils._generation import (
    plan_drop,
    plan_keep,
    plan_restore,
)

HEAD = ["sparkops-ray-head", "sparkops-model-server"]


def test_keep_stops_the_engine_first_and_renames():
    present = {"sparkops-ray-head": {"running": True}, "sparkops-model-server": {"running": True}}
    assert plan_keep(HEAD, present) == [
        ("stop", "sparkops-model-server"), ("rename", "sparkops-model-server", "sparkops-model-server-previous"),
        ("stop", "sparkops-ray-head"), ("rename", "sparkops-ray-head", "sparkops-ray-head-previous")]


def test_keep_after_an_interrupted_run_keeps_what_last_served():
    """An earlier run kept the generation and died before its new engine was ready."""
    present = {"sparkops-ray-head": {"running": True}, "sparkops-ray-head-previous": {"running": False},
               "sparkops-model-server-previous": {"running": False}}
    assert plan_keep(HEAD, present) == [("remove", "sparkops-ray-head")]


def test_keep_a_stopped_container_is_only_renamed_and_nothing_is_nothing():
    assert plan_keep(HEAD, {"sparkops-ray-head": {"running": False}}) == [
        ("rename", "sparkops-ray-head", "sparkops-ray-head-previous")]
    assert plan_keep(HEAD, {}) == []


def test_restore_puts_the_kept_generation_back_in_start_order():
    present = {"sparkops-ray-head": {"running": True}, "sparkops-ray-head-previous": {"running": False},
               "sparkops-model-server-previous": {"running": False}}
    assert plan_restore(HEAD, present) == [
        ("remove", "sparkops-ray-head"), ("rename", "sparkops-ray-head-previous", "sparkops-ray-head"),
        ("start", "sparkops-ray-head"),
        ("rename", "sparkops-model-server-previous", "sparkops-model-server"), ("start", "sparkops-model-server")]
    assert plan_restore(HEAD, {"sparkops-ray-head": {"running": True}}) == []  # nothing kept: left alone


def test_drop_removes_only_what_was_kept():
    present = {"sparkops-ray-head": {"running": True}, "sparkops-model-server-previous": {"running": False}}
    assert plan_drop(HEAD, present) == [("remove", "sparkops-model-server-previous")]
