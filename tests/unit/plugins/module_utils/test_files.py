# -*- coding: utf-8 -*-
"""atomic_write: what the collection writes (records, locks, caches, reports) is its owner's alone."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

from ansible_collections.sparkops.inference.plugins.module_utils._files import atomic_write


def test_files_and_the_directories_made_for_them_are_the_owners_alone(tmp_path):
    path = tmp_path / "state" / "record.json"
    old = os.umask(0)  # whatever the umask, the modes are the ones asked for
    try:
        atomic_write(str(path), '{"stopped": []}')
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    atomic_write(str(path), "x", mode=0o644)  # asked for: a file others must read
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and path.read_text() == "x"
    assert [p.name for p in path.parent.iterdir()] == ["record.json"]  # no temp file left
