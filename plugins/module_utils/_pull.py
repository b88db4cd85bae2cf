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
