# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""This collection's module_utils, imported when a filter runs - never when a filter file loads.

To find one filter, ansible-core imports every filter file of the collection (it asks each
file's FilterModule), in every task worker that uses one; each worker is a fresh fork and
collection Python is compiled from source. A filter file that imported its module_utils at the
top made every such lookup pay for all of them (47 ms against 6 ms: docs/performance.md,
"Filters"). tests/unit/plugins/filter/test_lazy_imports.py fails if one comes back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

PACKAGE = "ansible_collections.sparkops.inference.plugins.module_utils."


def module_utils(name):
    """The module_utils NAME (e.g. "_engine"), imported on the first call."""
    return importlib.import_module(PACKAGE + name)
