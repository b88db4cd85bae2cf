# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small JSON cache on a host, keyed by image id (an image's content never changes under it)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.sparkops.inference.plugins.module_utils._files import atomic_write


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (IOError, OSError, ValueError):
        return {}


def save(path, data):
    """Write atomically; returns an error text or None (a cache that cannot be written is not fatal)."""
    try:
        atomic_write(path, json.dumps(data, sort_keys=True))
    except (IOError, OSError) as exc:
        return "could not write the cache %s: %s" % (path, exc)
    return None
