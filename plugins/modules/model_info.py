#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: model_info
short_description: A model directory's architectures and a manifest to compare it across hosts
version_added: 0.1.0
description:
  - Reads C(architectures) and C(model_type) from the model's raw C(config.json) (with
    O(read_config=true)); a missing or malformed file fails with a message naming it.
  - Lists the directory (relative path and size of every file, links followed) and returns a
    manifest digest over that list - equal digests on two hosts mean the same files of the same
    sizes; with O(checksum=true) the digest covers every file's SHA-256 too (reads all the
    weights; the files are hashed up to 8 at a time, one per core - a single core hashes about
    1-1.6 GB/s, so a 120 GB model takes about 15-20 s on 8 cores where the disk keeps up).
author:
  - sparkops.inference developers (@sparkops)
extends_documentation_fragment:
  - sparkops.inference.attributes
  - sparkops.inference.attributes.read_only
options:
  path:
    description: The model directory.
    type: path
    required: true
  read_config:
    description: Read C(config.json) and fail when it is missing or has no C(architectures).
    type: bool
    default: true
  checksum:
    description: Include each file's SHA-256 in the manifest digest.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: What the model is
  sparkops.inference.model_info:
    path: /models/Qwen3.5-122B-A10B-FP8
"""

RETURN = r"""
exists:
  description: Whether the directory exists.
  returned: always
  type: bool
architectures:
  description: C(architectures) of config.json.
  returned: when O(read_config=true)
  type: list
  elements: str
  sample: [Qwen3_5MoeForConditionalGeneration]
model_type:
  description: C(model_type) of config.json.
  returned: when O(read_config=true)
  type: str
  sample: qwen3_5_moe
files:
  description: Number of files.
  returned: always
  type: int
size_bytes:
  description: Total size of the files.
  returned: always
  type: int
manifest:
  description: SHA-256 over the sorted (path, size[, sha256]) list.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._record import read_model


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            read_config=dict(type="bool", default=True),
            checksum=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    res, error = read_model(p["path"], p["checksum"], p["read_config"])
    res["changed"] = False
    if error:
        module.fail_json(msg=error, **res)
    module.exit_json(**res)


if __name__ == "__main__":
    main()
