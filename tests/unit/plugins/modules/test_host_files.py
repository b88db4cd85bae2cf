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


@pytest.mark.skipif(os.geteuid() != 0, reason="owner root: the module chowns to root")
def test_what_a_change_replaced_is_kept_and_put_back_or_dropped(tmp_path, capsys):
    """A key rotated and an HF token removed by a run whose engine then fails: the rollback puts
    back both as they were (the key's content and mode, the token's file removed again where it
    did not exist... here it existed); a later call drops what was kept."""
    d, keep = tmp_path / "secrets", str(tmp_path / "secrets.previous")
    d.mkdir(mode=0o700)
    key, token, new = str(d / "engine-api-key"), str(d / "hf-token"), str(d / "sglang-api-key.yaml")
    with open(key, "w") as f:
        f.write("key-one")
    os.chmod(key, 0o600)
    with open(token, "w") as f:
        f.write("hf-one")
    os.chmod(token, 0o640)
    rotate = {"keep_dir": keep, "files": [dict(secret(key), content="key-two"), secret(token, "absent"),
                                          dict(secret(new), content="api-key: key-two\n")]}
    assert run_module(capsys, rotate, check=True)["changed"] and not os.path.exists(keep)
    res = run_module(capsys, rotate)
    assert sorted(res["changed_paths"]) == sorted([key, token, new]) and res["kept_dropped"] is False
    assert open(key).read() == "key-two" and not os.path.exists(token) and os.path.exists(new)
    assert stat.S_IMODE(os.stat(keep).st_mode) == 0o700
    assert "key-one" not in json.dumps(res) and "key-two" not in json.dumps(res)
    back = {"keep_dir": keep, "kept": "restore", "files": [secret(key), secret(token), secret(new)]}
    dry = run_module(capsys, back, check=True)
    assert sorted(dry["changed_paths"]) == sorted([key, token, new]) and open(key).read() == "key-two"
    res = run_module(capsys, back)
    assert sorted(res["changed_paths"]) == sorted([key, token, new]) and res["kept_dropped"] is True
    assert open(key).read() == "key-one" and stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert open(token).read() == "hf-one" and stat.S_IMODE(os.stat(token).st_mode) == 0o640
    assert not os.path.exists(new) and not os.path.exists(keep)
    assert "key-one" not in json.dumps(res) and "hf-one" not in json.dumps(res)
    assert run_module(capsys, back)["changed"] is False  # nothing kept: nothing to put back
    # a run killed after it wrote its files (its engine never served), then a run with yet another
    # key: the first run's kept states stay - what the engine of before was started with - and are
    # named; only what nothing was kept for yet is kept now
    first = run_module(capsys, rotate)
    assert first["kept_before"] == [] and sorted(first["changed_paths"]) == sorted([key, token, new])
    same = run_module(capsys, rotate)
    assert same["changed"] is False and same["changed_paths"] == [] and same["kept_dropped"] is False
    assert sorted(same["kept_before"]) == sorted([key, token, new])
    other = run_module(capsys, dict(rotate, files=[dict(secret(key), content="key-three"), secret(token, "absent")]))
    assert other["changed_paths"] == [key] and sorted(other["kept_before"]) == sorted([key, token])
    res = run_module(capsys, back)
    assert open(key).read() == "key-one" and open(token).read() == "hf-one" and not os.path.exists(new)
    assert not os.path.exists(keep)
    # kept: drop - whatever is kept goes, and the files are written as given
    run_module(capsys, {"keep_dir": keep, "files": [dict(secret(key), content="key-three")]})
    gone = run_module(capsys, {"keep_dir": keep, "kept": "drop", "files": [secret(key, "absent")]})
    assert gone["kept_dropped"] is True and not os.path.exists(keep) and not os.path.exists(key)
    assert gone["kept_before"] == []
