# -*- coding: utf-8 -*-
"""host_files run in-process on a temp tree: a root-only directory for secrets, a secret's file
that is never shown, and the file removed once the secret is no longer set."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

import pytest

from ansible_collections.sparkops.inference.tests.unit.compat import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import host_files

CANARY = "sk-canary-host-files-41"


def run_module(capsys, args, check=False):
    if check:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            host_files.main()
    return json.loads(capsys.readouterr().out)


def secret(path, state="present"):
    spec = {"path": path, "mode": "0600", "secret": True, "state": state}
    if state == "present":
        spec["content"] = CANARY
    return spec


@pytest.mark.skipif(os.geteuid() != 0, reason="owner root: the module chowns to root")
def test_a_secret_lands_root_only_in_a_root_only_directory_and_goes_when_unset(tmp_path, capsys):
    d = tmp_path / "secrets"
    d.mkdir(mode=0o755)
    path = str(d / "engine-api-key")
    args = {"private_directories": [str(d)], "files": [secret(path)]}
    res = run_module(capsys, args, check=True)
    assert res["changed"] and not os.path.exists(path) and stat.S_IMODE(d.stat().st_mode) == 0o755
    res = run_module(capsys, args)
    assert res["changed"] and sorted(res["changed_paths"]) == sorted([str(d), path])
    assert stat.S_IMODE(d.stat().st_mode) == 0o700 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert open(path).read() == CANARY and CANARY not in json.dumps(res)
    assert run_module(capsys, args)["changed"] is False
    gone = run_module(capsys, {"private_directories": [str(d)], "files": [secret(path, "absent")]})
    assert gone["changed_paths"] == [path] and not os.path.exists(path) and CANARY not in json.dumps(gone)
    assert run_module(capsys, {"files": [secret(path, "absent")]})["changed"] is False


def test_a_file_without_content_is_named(tmp_path, capsys):
    res = run_module(capsys, {"files": [{"path": str(tmp_path / "f")}]})
    assert res["failed"] and res["msg"] == "files: %s has no content: give its content, or state: absent" % (
        tmp_path / "f")
