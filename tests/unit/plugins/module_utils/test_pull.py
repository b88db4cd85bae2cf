# -*- coding: utf-8 -*-
"""How far a pull is, from `docker pull` as the lab's Docker 20.10 printed it without a terminal
(fixtures/lab/docker-pull-20.10.txt: two layers on the host already, three fetched)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.sparkops.inference.plugins.module_utils._pull import PullProgress


def feed(lines):
    p = PullProgress("img")
    for line in lines:
        p.feed(line)
    return p


def test_a_whole_pull(fixture_text):
    p = feed(fixture_text("lab", "docker-pull-20.10.txt").splitlines())
    assert p.counts() == {"layers": 5, "done": 5, "downloaded": 5, "already_present": 2}
    assert p.summary() == "5 of 5 layers done (2 on the host already)"


def test_a_pull_half_way(fixture_text):
    lines = fixture_text("lab", "docker-pull-20.10.txt").splitlines()
    cut = lines[:lines.index("12223c3cd6c7: Download complete")]  # as a timeout would cut it
    p = feed(cut)
    assert p.counts() == {"layers": 5, "done": 2, "downloaded": 5, "already_present": 2}
    assert p.summary() == "2 of 5 layers done (2 on the host already)"


def test_nothing_yet_and_lines_that_are_not_layers():
    p = feed(["0.17.0: Pulling from sparkops/lab-vllm", "Digest: sha256:865e", "Status: Downloaded newer image"])
    assert p.summary() == "waiting for the registry" and p.counts()["layers"] == 0
