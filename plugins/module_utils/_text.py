# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text helpers the messages share."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def truncate(text, length, leeway=5, end="..."):
    """Jinja's truncate (at a word, with '...'), as the messages have always cut long text."""
    if len(text) <= length + leeway:
        return text
    return text[:length - len(end)].rsplit(" ", 1)[0] + end
