#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: host_files
short_description: Write the collection's files and directories on a host, in one pass
version_added: 0.2.0
description:
  - Makes each directory of O(directories) exist and each file of O(files) hold exactly its
    content with its mode and owner; a file is rewritten only when any of them differs, and
    then atomically (a temp file in the same directory, fsync, rename), so a reader never sees
    half of it.
  - One module call for what would otherwise be one C(ansible.builtin.copy) and one
    C(ansible.builtin.file) per path - the fabric environment file, the Ray token and Ray's
    session directory - with check mode and diff.
  - The content of a file marked O(files[].secret) never appears in a diff or a result.
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: Shows the content before and after of each changed file that is not secret, and each created directory.
  idempotent:
    support: full
options:
  files:
    description: The files to write.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Where the file goes (its directory is created, mode 0755, when missing).
        type: path
        required: true
      content:
        description: The whole content (required unless O(files[].state=absent)).
        type: str
      state:
        description: V(absent) removes the file when it is there (a secret no longer set).
        type: str
        choices: [present, absent]
        default: present
      mode:
        description: The file's mode, as an octal string.
        type: str
        default: "0644"
      owner_root:
        description: Owned by root (uid 0, gid 0).
        type: bool
        default: true
      secret:
        description: Keep the content out of the diff and the result.
        type: bool
        default: false
  directories:
    description: Directories to create when missing (mode 0755, with their parents).
    type: list
    elements: path
    default: []
  private_directories:
    description:
      - Directories that only root may enter (mode 0700, owned by root), created when missing and
        narrowed when they are more open; for secrets, created before the files in them.
    type: list
    elements: path
    default: []
    version_added: 0.3.0
  keep_dir:
    description:
      - Where the state of each file of O(files) is kept just before this call changes it (its
        content and mode, or that it did not exist), for a rollback to put back - the engine that
        served before a failed deploy is started again with the secrets it was started with.
      - Files are kept by their base name. The directory is root's alone (0700). What an earlier
        call kept there stays (see O(kept)) - that call did not finish (a deploy killed before its new
        engine served), and its kept states are what the engine of before was started with.
    type: path
    version_added: 0.3.0
  kept:
    description:
      - What to do with O(keep_dir).
      - V(keep) - keep the state of each file this call changes, unless O(keep_dir) already holds one
        for it (then that one stays); R(kept_before,return-kept_before) lists the files it already held.
      - V(restore) - put back each file of O(files) that has a kept state (its content and mode, or
        removed when it did not exist), then drop O(keep_dir); O(files[].content) and
        O(files[].state) are not used.
      - V(drop) - drop O(keep_dir); the files are then written as given, nothing kept.
    type: str
    choices: [keep, restore, drop]
    default: keep
    version_added: 0.3.0
"""

EXAMPLES = r"""
- name: Keep the Ray token root-only and Ray's session directory present
  sparkops.inference.host_files:
    files:
      - path: /etc/sparkops/ray-token
        content: "{{ ray_cluster_token }}"
        mode: "0600"
        secret: true
    directories: [/var/lib/sparkops/ray]
  no_log: true
"""

RETURN = r"""
changed_paths:
  description: The files and directories that were (or, in check mode, would be) written or created.
  returned: always
  type: list
  elements: str
kept_dropped:
  description: Whether O(keep_dir) held kept states that were (or would be) dropped (O(kept=restore), O(kept=drop)).
  returned: always
  type: bool
  version_added: 0.3.0
kept_before:
  description:
    - The files of O(files) whose state O(keep_dir) held before this call - an earlier call kept them
      and was not followed by O(kept=restore) or O(kept=drop). With O(kept=keep); else empty.
    - For secrets read at start, a file listed here may differ from what the running reader was
      started with, even when this call changed nothing.
  returned: always
  type: list
  elements: str
  version_added: 0.3.0
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._files import (
    atomic_write, has_kept_state, keep_state, kept_state)

SECRET = "(secret content, not shown)\n"


def file_state(path):
    """(content or None, mode, uid, gid) of path as it is."""
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            data = f.read()
        return data.decode("utf-8", "replace"), st.st_mode & 0o7777, st.st_uid, st.st_gid
    except (IOError, OSError):
        return None, None, None, None


def private_directory(module, path, changed, diffs):
    """`path` a directory of root's alone (0700, uid 0): created, or narrowed, before any file in it."""
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and st.st_mode & 0o7777 == 0o700 and (st.st_uid, st.st_gid) == (0, 0):
        return
    changed.append(path)
    diffs.append({"before_header": path, "after_header": path,
                  "before": "(absent)\n" if st is None else "(directory, mode %04o)\n" % (st.st_mode & 0o7777),
                  "after": "(directory, mode 0700, root only)\n"})
    if module.check_mode:
        return
    try:
        if st is None:
            os.makedirs(path, 0o700)
        os.chown(path, 0, 0)
        os.chmod(path, 0o700)
    except OSError as exc:
        module.fail_json(msg="cannot make %s a directory only root reads: %s" % (path, exc), changed_paths=changed)


def keep(module, spec, changed, kept_before):
    """Keep the file's state in keep_dir before this call changes it (kept: keep), unless an
    earlier call's state of it is kept there (kept_before)."""
    p = module.params
    if module.check_mode or not p["keep_dir"] or p["kept"] != "keep" or spec["path"] in kept_before:
        return
    try:
        keep_state(p["keep_dir"], spec["path"])
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot keep the state of %s in %s before it changes: %s - nothing of it was changed"
                             % (spec["path"], p["keep_dir"], exc), changed_paths=changed)


def restore(module, changed, diffs):
    """kept: restore - each file of `files` back to its kept state, then keep_dir dropped."""
    p = module.params
    for spec in p["files"]:
        state = kept_state(p["keep_dir"], spec["path"])
        if state is None:
            continue
        exists, data, mode = state
        content, cur_mode = file_state(spec["path"])[:2]
        if exists and content == data.decode("utf-8", "replace") and cur_mode == mode:
            continue
        if not exists and content is None:
            continue
        changed.append(spec["path"])
        shown = SECRET if spec["secret"] else None
        diffs.append({"before_header": spec["path"], "after_header": spec["path"],
                      "before": "(absent)\n" if content is None else shown or content,
                      "after": (shown or data.decode("utf-8", "replace")) if exists else "(absent)\n"})
        if module.check_mode:
            continue
        try:
            if exists:
                atomic_write(spec["path"], data, mode=mode, owner=(0, 0) if spec["owner_root"] else None)
            else:
                os.unlink(spec["path"])
        except (IOError, OSError) as exc:
            module.fail_json(msg="cannot put back the kept state of %s: %s" % (spec["path"], exc),
                             changed_paths=changed)


def drop_kept(module):
    """Drop keep_dir (whatever it holds); True when it was there."""
    path = module.params["keep_dir"]
    if not path or not os.path.lexists(path):
        return False
    if not module.check_mode:
        try:
            shutil.rmtree(path)
        except OSError as exc:
            module.fail_json(msg="cannot drop the kept states in %s: %s" % (path, exc))
    return True


def remove_file(module, spec, changed, diffs, kept_before):
    """Remove the file of a spec with state absent, when it is there."""
    if not os.path.lexists(spec["path"]):
        return
    changed.append(spec["path"])
    diffs.append({"before_header": spec["path"], "after_header": spec["path"],
                  "before": SECRET if spec["secret"] else file_state(spec["path"])[0] or "", "after": "(absent)\n"})
    keep(module, spec, changed, kept_before)
    if not module.check_mode:
        try:
            os.unlink(spec["path"])
        except OSError as exc:
            module.fail_json(msg="cannot remove %s: %s" % (spec["path"], exc), changed_paths=changed)


ARGUMENT_SPEC = dict(
    files=dict(type="list", elements="dict", default=[], options=dict(
        path=dict(type="path", required=True),
        content=dict(type="str", no_log=False),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        mode=dict(type="str", default="0644"),
        owner_root=dict(type="bool", default=True),
        secret=dict(type="bool", default=False),
    )),
    directories=dict(type="list", elements="path", default=[]),
    private_directories=dict(type="list", elements="path", default=[]),
    keep_dir=dict(type="path"),
    kept=dict(type="str", choices=["keep", "restore", "drop"], default="keep"),
)


def directory(module, path, changed, diffs):
    """A plain directory (0755) where none is."""
    if os.path.isdir(path):
        return
    changed.append(path)
    diffs.append({"before_header": path, "after_header": path, "before": "(absent)\n", "after": "(directory)\n"})
    if not module.check_mode:
        try:
            os.makedirs(path, 0o755)
        except OSError as exc:
            module.fail_json(msg="cannot create the directory %s: %s" % (path, exc), changed_paths=changed)


def present_file(module, spec, changed, diffs, kept_before):
    """The file with its content and mode (root's, unless owner_root is false), written
    atomically after its state before was kept; a secret's content never in the diff."""
    if spec["content"] is None:
        module.fail_json(msg="files: %s has no content: give its content, or state: absent" % spec["path"])
    try:
        mode = int(spec["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode %r of %s is not an octal mode: expected e.g. \"0644\""
                             % (spec["mode"], spec["path"]))
    content, cur_mode, uid, gid = file_state(spec["path"])
    owner = (0, 0) if spec["owner_root"] else None
    if content == spec["content"] and cur_mode == mode and (owner is None or (uid, gid) == owner):
        return
    changed.append(spec["path"])
    if spec["secret"]:
        before, after = (SECRET if content is not None else ""), SECRET
    else:
        before, after = content or "", spec["content"]
    if cur_mode is not None and cur_mode != mode:
        before, after = before + "(mode %04o)\n" % cur_mode, after + "(mode %04o)\n" % mode
    diffs.append({"before_header": spec["path"], "after_header": spec["path"], "before": before, "after": after})
    keep(module, spec, changed, kept_before)
    if not module.check_mode:
        try:
            atomic_write(spec["path"], spec["content"], mode=mode, owner=owner)
        except (IOError, OSError) as exc:
            module.fail_json(msg="cannot write %s: %s" % (spec["path"], exc), changed_paths=changed)


def put_back(module):
    """kept: restore - every file as it was kept (when a keep_dir is given), then the keep dropped."""
    changed, diffs = [], []
    if module.params["keep_dir"]:
        restore(module, changed, diffs)
    dropped = drop_kept(module)
    return dict(changed=bool(changed) or dropped, changed_paths=changed, kept_dropped=dropped, kept_before=[],
                diff=diffs)


def converge(module):
    """kept: keep or drop - the directories, then each file present or absent."""
    p = module.params
    changed, diffs = [], []
    dropped = drop_kept(module) if p["kept"] == "drop" else False
    kept_before = [spec["path"] for spec in p["files"]
                   if p["keep_dir"] and p["kept"] == "keep" and has_kept_state(p["keep_dir"], spec["path"])]
    for path in p["private_directories"]:
        private_directory(module, path, changed, diffs)
    for path in p["directories"]:
        directory(module, path, changed, diffs)
    for spec in p["files"]:
        if spec["state"] == "absent":
            remove_file(module, spec, changed, diffs, kept_before)
        else:
            present_file(module, spec, changed, diffs, kept_before)
    return dict(changed=bool(changed) or dropped, changed_paths=changed, kept_dropped=dropped,
                kept_before=kept_before, diff=diffs)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    # a secret's content is masked wherever the result would show it (its invocation too)
    for spec in module.params["files"]:
        if spec["secret"] and spec["content"]:
            module.no_log_values.add(spec["content"])
    module.exit_json(**(put_back(module) if module.params["kept"] == "restore" else converge(module)))


if __name__ == "__main__":
    main()
