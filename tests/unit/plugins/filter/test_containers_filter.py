# -*- coding: utf-8 -*-
# The container-spec filters hand module_utils/_containers' answers to the roles, and its
# errors as Ansible filter errors (what a playbook shows).
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.containers import FilterModule

CMD = {"engine": "vllm", "model_path": "/opt/models/qwen", "served_name": "qwen", "gpus_total": 2, "nodes": 2,
       "gpu_memory_utilization": 0.85}


def test_filters_return_the_specs_and_raise_ansible_errors():
    filters = FilterModule().filters()
    cmd = filters["engine_command"](dict(CMD))
    assert cmd["entrypoint"] == ["vllm", "serve"] and cmd["args"][0] == "/opt/models/qwen"
    with pytest.raises(AnsibleFilterError, match="needs name, image"):
        filters["ray_container"]({})
    with pytest.raises(AnsibleFilterError, match="engine is 'tgi'"):
        filters["engine_command"](dict(CMD, engine="tgi"))
