# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How far a `docker pull` is, from the lines the CLI prints without a terminal (pure logic).

Without a TTY the CLI prints one line per layer state change: "<layer>: Pulling fs layer",
"Waiting", "Downloading", "Verifying Checksum", "Download complete", "Extracting", "Pull
complete", or "Already exists" for a layer the host has (the layers a pull cut by its timeout
had fetched, when it is retried). No byte counts: progress is counted in layers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

LAYER_LINE = re.compile(r"^([0-9a-f]{12}): (.+?)\s*$")
DONE = ("pull complete", "already exists")
DOWNLOADED = ("download complete", "verifying checksum", "extracting", "pull complete", "already exists")


class PullProgress(object):
    def __init__(self, image):
        self.image = image
        self.layers = {}  # layer id -> last status (lower case)
        self.order = []
        self.present = set()  # "Already exists": on the host before this attempt

    def feed(self, line):
        m = LAYER_LINE.match(line.strip())
        if not m:
            return False
        layer, status = m.group(1), m.group(2).strip().lower()
        if layer not in self.layers:
            self.order.append(layer)
        self.layers[layer] = status
        if status == "already exists":
            self.present.add(layer)
        return True

    def counts(self):
        states = list(self.layers.values())
        return {"layers": len(states), "done": sum(1 for s in states if s in DONE),
                "downloaded": sum(1 for s in states if s in DOWNLOADED),
                "already_present": len(self.present)}

    def summary(self):
        """'7 of 11 layers done (3 were on the host already), 2 downloading'"""
        c = self.counts()
        if not c["layers"]:
            return "waiting for the registry"
        busy = sum(1 for s in self.layers.values() if s == "downloading" or s == "extracting")
        text = "%d of %d layers done" % (c["done"], c["layers"])
        if c["already_present"]:
            text += " (%d on the host already)" % c["already_present"]
        if busy:
            text += ", %d downloading or extracting" % busy
        return text


# ------------------------------------------------------------------ a pull that filled the disk

DISK_FULL = "no space left on device"


def manifest_size(doc, os_name="linux", arch="amd64"):
    """From `docker manifest inspect` output: (bytes, None) - the compressed size of one image
    (its config and layers) - or (None, digest) of this platform's manifest when doc is a list
    (an OCI index or a Docker manifest list) to be inspected next; (None, None) when neither."""
    if not isinstance(doc, dict):
        return None, None
    if isinstance(doc.get("manifests"), list):
        for m in doc["manifests"]:
            plat = m.get("platform") or {}
            if plat.get("os") == os_name and plat.get("architecture") == arch:
                return None, m.get("digest")
        return None, None
    layers = doc.get("layers")
    if not isinstance(layers, list):
        return None, None
    return sum(int(x.get("size") or 0) for x in layers) + int((doc.get("config") or {}).get("size") or 0), None


def repository_of(image):
    """registry/repository of an image reference, without its tag or digest."""
    name = image.split("@", 1)[0]
    head, sep, last = name.rpartition("/")
    if ":" in last:
        last = last.split(":", 1)[0]
    return head + sep + last


def gib(n):
    return "%.2f GiB" % (n / float(1 << 30)) if n >= 1 << 28 else "%d MiB" % (n // (1 << 20))


def disk_full_reason(image, attempt, attempts, root, free_bytes, image_bytes, size_note=""):
    """The message of a pull that ran out of disk: where, how much is free, how big the image is."""
    size = ("the image is %s compressed (more once unpacked)" % gib(image_bytes) if image_bytes is not None
            else "the image's size is unknown (%s)" % (size_note or "docker manifest inspect gave none"))
    where = ("Docker's data root %s has %s free" % (root, gib(free_bytes)) if root and free_bytes is not None
             else "the free space of Docker's data root %s could not be read" % (root or "(docker info gave none)"))
    return ("pulling %s ran out of disk space (no space left on device in attempt %d of %d; a full disk is "
            "not retried): %s, %s. Free space there (docker image prune -a, docker builder prune; old "
            "models) or move Docker's data-root to a larger disk" % (image, attempt, attempts, where, size))
