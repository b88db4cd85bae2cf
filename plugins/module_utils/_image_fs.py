# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read-only views of an image's files, without running the image.

LayerFS reads the image's layer directories in place (Docker's overlay2 driver names them in
`docker image inspect` .GraphDriver): nothing is copied, so a 30 GB image costs what the few
files read cost, for any CPU architecture. TarFS keeps what a probe needs from a tar stream
(`docker export` of a created, never started, container) for other storage drivers.
Both answer the same questions: exists, isdir, listdir, read_text, glob (absolute image paths).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os
import posixpath
import re
import stat

MAX_READ = 4 * 1024 * 1024
OPAQUE_XATTRS = ("trusted.overlay.opaque", "user.overlay.opaque")


def _parts(path):
    return [p for p in posixpath.normpath("/" + path).split("/") if p]


def _abs(path):
    """The absolute, normalised form of an image path (normpath keeps a leading '//')."""
    return "/" + "/".join(_parts(path))


class _GlobMixin(object):
    def glob(self, pattern):
        """Paths matching pattern, component by component (no `**`)."""
        paths = ["/"]
        for part in _parts(pattern):
            nxt = []
            for base in paths:
                if any(c in part for c in "*?["):
                    nxt.extend(posixpath.join(base, n) for n in sorted(self.listdir(base))
                               if fnmatch.fnmatchcase(n, part))
                elif self.exists(posixpath.join(base, part)):
                    nxt.append(posixpath.join(base, part))
            paths = nxt
        return paths


class LayerFS(_GlobMixin):
    """The merged view of overlay2 layer directories (upper first) with whiteouts honoured."""

    def __init__(self, layers):
        self.layers = [d for d in layers if d]

    @staticmethod
    def _whiteout(path):
        try:
            st = os.lstat(path)
        except OSError:
            return False
        return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0

    @staticmethod
    def _opaque(path):
        for name in OPAQUE_XATTRS:
            try:
                if os.getxattr(path, name) == b"y":
                    return True
            except (OSError, AttributeError):
                continue
        return False

    def _resolve(self, path, depth=0):
        """The real path of an image path in the top-most layer that has it, or None."""
        parts = _parts(path)
        if not parts:
            return self.layers[0] if self.layers else None
        for layer in self.layers:
            cur, opaque = layer, False
            for i, part in enumerate(parts):
                cur = os.path.join(cur, part)
                if self._whiteout(cur):
                    return None  # deleted in this layer: hides every layer below
                if not os.path.lexists(cur):
                    break
                if os.path.islink(cur) and depth < 8:
                    target = posixpath.normpath(posixpath.join("/", *(parts[:i] + [os.readlink(cur)])))
                    return self._resolve(posixpath.join(target, *parts[i + 1:]), depth + 1)
                if i == len(parts) - 1:
                    return cur
                opaque = opaque or self._opaque(cur)
            if opaque:
                return None  # an opaque directory here hides what lower layers had under it
        return None

    def exists(self, path):
        return self._resolve(path) is not None

    def isdir(self, path):
        real = self._resolve(path)
        return real is not None and os.path.isdir(real)

    def listdir(self, path):
        names, gone = [], set()
        parts = _parts(path)
        for layer in self.layers:
            real = os.path.join(layer, *parts) if parts else layer
            if self._whiteout(real):
                break
            try:
                entries = os.listdir(real)
            except OSError:
                continue
            for n in entries:
                if n in gone or n in names:
                    continue
                if self._whiteout(os.path.join(real, n)):
                    gone.add(n)
                else:
                    names.append(n)
            if self._opaque(real):
                break
        return names

    def read_text(self, path):
        real = self._resolve(path)
        if real is None or not os.path.isfile(real):
            return None
        try:
            with open(real, "rb") as f:
                return f.read(MAX_READ).decode("utf-8", "replace")
        except (IOError, OSError):
            return None


# what a probe reads: TarFS keeps these files' contents, and every path's name
KEEP = [re.compile(p) for p in (
    r".*\.(dist|egg)-info/(METADATA|PKG-INFO|direct_url\.json)$",
    r".*/(site|dist)-packages/[^/]*\.pth$",
    r".*/__editable__[^/]*_finder\.py$",
    r".*/vllm/model_executor/models/registry\.py$",
    r".*/sglang/srt/models/[^/]+\.py$",
    r".*/(vllm|sglang|torch)/__init__\.py$",
    r".*/torch/version\.py$",
    r"usr/local/cuda[^/]*/version\.json$",
)]


class TarFS(_GlobMixin):
    """A probe's view of an image from a tar stream of its file system."""

    def __init__(self, tar):
        self.files, self.dirs, self.links = {}, {"/": set()}, {}
        for member in tar:
            name = _abs(member.name)
            self._add_parents(name)
            if member.isdir():
                self.dirs.setdefault(name, set())
            elif member.issym():
                self.links[name] = member.linkname
            elif member.isfile():
                keep = any(rx.match(name.lstrip("/")) for rx in KEEP)
                data = None
                if keep:
                    f = tar.extractfile(member)
                    data = f.read(MAX_READ) if f else b""
                self.files[name] = data

    def _add_parents(self, name):
        child = name
        while child != "/":
            parent = posixpath.dirname(child)
            self.dirs.setdefault(parent, set()).add(posixpath.basename(child))
            child = parent

    def _follow(self, path, depth=0):
        path = _abs(path)
        parts = _parts(path)
        for i in range(1, len(parts) + 1):
            prefix = "/" + "/".join(parts[:i])
            if prefix in self.links and depth < 8:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(prefix), self.links[prefix]))
                return self._follow(posixpath.join(target, *parts[i:]) if parts[i:] else target,
                                    depth + 1)
        return path

    def exists(self, path):
        p = self._follow(path)
        return p in self.files or p in self.dirs or _abs(path) in self.links

    def isdir(self, path):
        return self._follow(path) in self.dirs

    def listdir(self, path):
        return sorted(self.dirs.get(self._follow(path), ()))

    def read_text(self, path):
        data = self.files.get(self._follow(path))
        return None if data is None else data.decode("utf-8", "replace")
