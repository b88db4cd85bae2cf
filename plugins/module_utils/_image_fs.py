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


def _climbs_out(depth, target):
    """Whether a relative link `target`, in a directory `depth` levels below the root, goes
    above the root on its way (more `..` than directories to climb)."""
    for seg in target.split("/"):
        if seg == "..":
            depth -= 1
            if depth < 0:
                return True
        elif seg not in ("", "."):
            depth += 1
    return False


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


MAX_LINKS = 40  # symbolic links one path may pass through, as Linux's own path walk allows


class LayerFS(_GlobMixin):
    """The merged view of overlay2 layer directories (upper first) with whiteouts honoured.

    Every path is walked component by component with lstat: a symbolic link in the image is
    followed inside the image (an absolute target from the image's root, `..` never above it),
    never by the host, so no link - however deep, or looping - makes the probe read a file of the
    host it runs on as root. Paths that loop are noted in `loops`, relative links that climb
    above the image's root in `outside`; both read as absent.
    """

    def __init__(self, layers):
        self.layers = [d for d in layers if d]
        self.loops = set()
        self.outside = set()  # "link -> target" of relative links that climb above the image's root

    @staticmethod
    def _opaque(path):
        for name in OPAQUE_XATTRS:
            try:
                if os.getxattr(path, name, follow_symlinks=False) == b"y":
                    return True
            except (OSError, AttributeError, TypeError):
                continue
        return False

    def _in_layer(self, layer, parts):
        """("found", host path, lstat) / ("absent", None, None) - look in the layers below - /
        ("hidden", None, None) - deleted here or under a non-directory: hides the layers below.
        A 4th item: whether a directory on the way is opaque (hides what is below under it)."""
        cur, opaque = layer, False
        for i, part in enumerate(parts):
            cur = os.path.join(cur, part)
            try:
                st = os.lstat(cur)  # never follows: cur's parents are real directories of this layer
            except OSError:
                return "absent", None, None, opaque
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                return "hidden", None, None, opaque  # a whiteout
            if i == len(parts) - 1:
                return "found", cur, st, opaque
            if not stat.S_ISDIR(st.st_mode):
                return "hidden", None, None, opaque  # a file or a link here, a directory above
            opaque = opaque or self._opaque(cur)
        return "found", cur, os.lstat(cur), opaque

    def _lookup(self, parts):
        """(host path, lstat) of the top-most entry of the image path parts (no link in its
        parents), or None."""
        for layer in self.layers:
            status, real, st, opaque = self._in_layer(layer, parts)
            if status == "found":
                return real, st
            if status == "hidden" or opaque:
                return None
        return None

    def _resolve(self, path):
        """(host path, lstat, canonical image parts) of an image path with its symbolic links
        followed inside the image, or None."""
        todo, done, links = _parts(path), [], 0
        while todo:
            part = todo.pop(0)
            found = self._lookup(done + [part])
            if found is None:
                return None
            real, st = found
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_LINKS:
                    self.loops.add(_abs("/".join(done + [part])))
                    return None
                target = os.readlink(real)
                if not target.startswith("/") and _climbs_out(len(done), target):
                    # the kernel would stop at the root; a link that needs to go above it was
                    # made for another root (the host's): it points outside the image
                    self.outside.add("%s -> %s" % (_abs("/".join(done + [part])), target))
                    return None
                todo = _parts("/".join(([] if target.startswith("/") else done) + [target])) + todo
                done = []
                continue
            done.append(part)
        if not done:
            return (self.layers[0], os.lstat(self.layers[0]), []) if self.layers else None
        real, st = self._lookup(done)
        return real, st, done

    def exists(self, path):
        return self._resolve(path) is not None

    def isdir(self, path):
        found = self._resolve(path)
        return found is not None and stat.S_ISDIR(found[1].st_mode)

    def listdir(self, path):
        found = self._resolve(path)
        if found is None or not stat.S_ISDIR(found[1].st_mode):
            return []
        parts = found[2]
        names, gone = [], set()
        for layer in self.layers:
            if parts:
                status, real, st, opaque = self._in_layer(layer, parts)
                if status == "hidden":
                    break
                if status == "absent" or not stat.S_ISDIR(st.st_mode):
                    if opaque or status == "found":
                        break
                    continue
            else:
                real, opaque = layer, False
            try:
                entries = os.listdir(real)  # real is a directory, reached without a link
            except OSError:
                continue
            for n in entries:
                if n in gone or n in names:
                    continue
                try:
                    st = os.lstat(os.path.join(real, n))
                except OSError:
                    continue
                if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                    gone.add(n)
                else:
                    names.append(n)
            if opaque or self._opaque(real):
                break
        return names

    def read_text(self, path):
        found = self._resolve(path)
        if found is None or not stat.S_ISREG(found[1].st_mode):
            return None
        try:
            fd = os.open(found[0], os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            return f.read(MAX_READ).decode("utf-8", "replace")


# what a probe reads: TarFS keeps these files' contents, and every path's name
KEEP = [re.compile(p) for p in (
    r".*\.(dist|egg)-info/(METADATA|PKG-INFO|direct_url\.json)$",
    r".*/(site|dist)-packages/[^/]*\.pth$",
    r".*/__editable__[^/]*_finder\.py$",
    r".*/vllm/model_executor/models/registry\.py$",
    r".*/sglang/srt/models/[^/]+\.py$",
    r".*/vllm/(engine/arg_utils|entrypoints/openai/cli_args|entrypoints/cli/serve)\.py$",
    r".*/sglang/srt/server_args\.py$",
    r".*/(vllm|sglang|torch)/__init__\.py$",
    r".*/torch/version\.py$",
    r"usr/local/cuda[^/]*/version\.json$",
)]


class TarFS(_GlobMixin):
    """A probe's view of an image from a tar stream of its file system."""

    def __init__(self, tar):
        self.files, self.dirs, self.links = {}, {"/": set()}, {}
        self.loops, self.outside = set(), set()  # as LayerFS's
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

    def _follow(self, path):
        """The image path `path` names with its symbolic links followed inside the image, as
        LayerFS does (loops and relative links above the root noted, None for them)."""
        todo, done, links = _parts(path), [], 0
        while todo:
            part = todo.pop(0)
            here = "/" + "/".join(done + [part])
            if here in self.links:
                links += 1
                if links > MAX_LINKS:
                    self.loops.add(here)
                    return None
                target = self.links[here]
                if not target.startswith("/") and _climbs_out(len(done), target):
                    self.outside.add("%s -> %s" % (here, target))
                    return None
                todo = _parts("/".join(([] if target.startswith("/") else done) + [target])) + todo
                done = []
                continue
            done.append(part)
        return _abs("/".join(done))

    def exists(self, path):
        p = self._follow(path)
        return p is not None and (p in self.files or p in self.dirs)

    def isdir(self, path):
        return self._follow(path) in self.dirs

    def listdir(self, path):
        return sorted(self.dirs.get(self._follow(path), ()))

    def read_text(self, path):
        data = self.files.get(self._follow(path))
        return None if data is None else data.decode("utf-8", "replace")
