# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing a file so that a reader never sees half of it, on a host or on the controller.

atomic_write(): a temp file in the target's own directory (so the rename never crosses a file
system), the mode set before any byte is written (a token is never readable by others, not
even for a moment), data written and fsync'ed, renamed over the target, the directory fsync'ed
(the rename survives a power cut). Used by the gpu_memory record, the probe caches, the Ray
token and the deploy report.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def atomic_write(path, data, mode=0o600, owner=None, dir_mode=0o700):
    """Write data (str or bytes) to path atomically; owner: (uid, gid) or None. Raises OSError.
    Only its owner reads it unless `mode` says otherwise (records, locks, caches, reports: root's
    or the controller user's alone); a missing directory is made 0700."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        os.makedirs(directory, dir_mode)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".")
    try:
        os.fchmod(fd, mode)
        if owner is not None:
            os.fchown(fd, owner[0], owner[1])
        with os.fdopen(fd, "wb") as f:
            fd = None
            f.write(data.encode("utf-8") if not isinstance(data, bytes) else data)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
        tmp = None
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
