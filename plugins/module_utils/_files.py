# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing a file so that a reader never sees half of it, on a host or on the controller; and
reading one that may not be there.

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


# A file's state kept before a change, for a rollback to put back (host_files' keep_dir): its
# content and mode in KEEP/<name>, or an empty KEEP/<name>.absent when it did not exist.
ABSENT_MARK = ".absent"


def _kept_paths(keep_dir, path):
    """Where keep_dir holds path's state: (its copy, the mark that it did not exist)."""
    name = os.path.basename(path)
    return os.path.join(keep_dir, name), os.path.join(keep_dir, name + ABSENT_MARK)


def keep_state(keep_dir, path):
    """Keep path's state as it is now in keep_dir (root-only, made when missing). Raises OSError."""
    copy, mark = _kept_paths(keep_dir, path)
    owner = (0, 0) if os.geteuid() == 0 else None
    try:
        with open(path, "rb") as f:
            data = f.read()
        mode = os.stat(path).st_mode & 0o7777
    except (IOError, OSError):  # it does not exist: a mark says so, and no copy is left
        atomic_write(mark, b"", mode=0o600, owner=owner)
        if os.path.lexists(copy):
            os.unlink(copy)
        return
    atomic_write(copy, data, mode=mode, owner=owner)
    if os.path.lexists(mark):
        os.unlink(mark)


def has_kept_state(keep_dir, path):
    """Whether keep_dir holds a state of path (its copy, or the mark that it did not exist)."""
    return any(os.path.lexists(p) for p in _kept_paths(keep_dir, path))


def kept_state(keep_dir, path):
    """What keep_dir holds for path: None (nothing kept), (False, None, None) (it did not exist),
    or (True, its content as bytes, its mode)."""
    copy, mark = _kept_paths(keep_dir, path)
    if os.path.lexists(mark):
        return False, None, None
    try:
        with open(copy, "rb") as f:
            return True, f.read(), os.stat(copy).st_mode & 0o7777
    except (IOError, OSError):
        return None


def read_file(path):
    """The file's text, or None when it cannot be read (absent, a directory, no permission)."""
    try:
        with open(path) as f:
            return f.read()
    except (IOError, OSError):
        return None
