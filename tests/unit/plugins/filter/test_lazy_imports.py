# -*- coding: utf-8 -*-
# To find one of this collection's filters, ansible-core's Jinja2 plugin loader imports every
# filter file of the collection (it iterates plugins/filter/ and asks each file's FilterModule),
# in every task worker - a fresh fork - that uses one. A module_utils imported at the top of a
# filter file is therefore compiled from source in each of those workers even where none of its
# filters is called (47 ms a worker when they all were). The filter files import theirs when a
# filter runs: this looks one filter up the way ansible-core does, in a fresh interpreter.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

LOOKUP = r"""
import json, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
init_plugin_loader()
loaded = filter_loader.get(sys.argv[1])
print(json.dumps({"found": loaded is not None,
                  "filters": sorted(m for m in sys.modules if m.startswith("ansible_collections.sparkops.inference.plugins.filter.")),
                  "module_utils": sorted(m for m in sys.modules if m.startswith("ansible_collections.sparkops.inference.plugins.module_utils."))}))
"""


def look_up(name):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"))
    res = subprocess.run([sys.executable, "-c", LOOKUP, name], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_looking_up_a_filter_loads_every_filter_file_and_no_module_utils():
    seen = look_up("sparkops.inference.launch_plan")
    assert seen["found"]
    # what makes laziness matter: ansible-core loaded the other filter files too
    on_disk = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "filter")) if f.endswith(".py"))
    assert [m.rsplit(".", 1)[1] for m in seen["filters"]] == on_disk
    assert seen["module_utils"] == []
