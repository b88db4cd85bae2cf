# -*- coding: utf-8 -*-
# watchdog_settings_error: the role's settings checked in preflight exactly as an agent checks them
# at its start (a setting the filter lets through, the agent takes; one it names, the agent refuses).
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.sparkops.inference.plugins.filter.watchdog import watchdog_settings_error
from ansible_collections.sparkops.inference.plugins.module_utils import _watchdog

# what roles/watchdog/vars/main.yml hands over with the role's defaults: strings, as templated
DEFAULTS = {"interval": "30", "timeout": "20", "failures": "3", "max_restarts": "2", "window": "3600",
            "grace": "900", "phase_timeout": "600", "stop_timeout": "30", "poll": "2", "paused": False}
HEAD = {"role": "head", "host": "spark1", "ray_container": "sparkops-ray-head", "engine_container": "e",
        "state_file": "/s", "probe_url": "http://a:8000/v1/completions", "model": "m", "listen": "a",
        "port": 29880, "workers": [], "pause_file": "/p", "lock_file": "/l"}


@pytest.mark.parametrize("change, message", [
    ({}, ""),
    ({"max_restarts": "0", "paused": "true"}, ""),
    ({"timeout": "45"}, "watchdog_timeout is 45 s, longer than the interval (30 s): a probe would still run when the "
                        "next is due; set watchdog_timeout below watchdog_interval"),
    ({"failures": "0"}, "watchdog_failures is 0: expected 1 or more"),
    ({"stop_timeout": "-5"}, "watchdog_stop_timeout is -5: expected 0 or more"),
    ({"window": "an hour"}, "watchdog_window is 'an hour': expected a whole number"),
])
def test_the_filter_names_what_an_agent_would_refuse_and_lets_through_what_it_takes(change, message):
    chosen = dict(DEFAULTS, **change)
    assert watchdog_settings_error(chosen) == message
    if message:
        with pytest.raises(_watchdog.ConfigError) as err:
            _watchdog.config(dict(HEAD, **chosen))
        assert str(err.value) == message
    else:
        cfg = _watchdog.config(dict(HEAD, **chosen))
        assert cfg["interval"] == 30 and cfg["paused"] is (change.get("paused") == "true")


def test_not_a_dict_is_named():
    with pytest.raises(AnsibleFilterError) as err:
        watchdog_settings_error(["interval", 30])
    assert "expected the settings (a dict), found list" in str(err.value)
