# -*- coding: utf-8 -*-
"""The watchdog's decisions, its signed gang protocol, and one gang restart end to end between a
real head agent and a real worker agent (real HTTP on loopback); the Docker daemon they talk to is
a stand-in on a unix socket that records each Engine API call, in the order the daemons got them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import sys
import threading
import time

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils import _watchdog as wd
from ansible_collections.sparkops.inference.plugins.module_utils._containers import SpecError, watchdog_container

HEAD = {"role": "head", "host": "spark1", "ray_container": "sparkops-ray-head",
        "engine_container": "sparkops-model-server", "state_file": "/var/lib/sparkops/watchdog.json",
        "probe_url": "http://10.0.0.1:8000/v1/completions", "model": "qwen", "listen": "127.0.0.1",
        "port": 29880, "workers": ["spark2"], "pause_file": "/var/lib/sparkops/watchdog.pause",
        "lock_file": "/var/lib/sparkops/deploy.lock", "interval": 10, "timeout": 5, "failures": 3,
        "max_restarts": 2, "window": 3600, "grace": 300}


def run_probes(cfg, results, start=1000.0, step=10.0, state=None):
    """Feed probe results through decide(); the actions it asks for, and the last state."""
    state = state or wd.new_state("head")
    actions = []
    for i, ok in enumerate(results):
        now = start + i * step
        state, action = wd.decide(state, ok, None if ok else "timed out", now, cfg)
        if action == "restart":
            state = wd.gang_done(wd.gang_started(state, now, cfg), now, cfg, [])
        actions.append(action)
    return actions, state


def test_k_failures_in_a_row_restart_once_and_an_answer_in_between_resets_the_count():
    cfg = wd.config(HEAD)
    actions, state = run_probes(cfg, [False, False, True, False, False, True])
    assert actions == [None] * 6 and state["state"] == "watching" and state["restarts"] == []
    actions, state = run_probes(cfg, [False, False, False])
    assert actions == [None, None, "restart"] and state["generation"] == 1 and state["state"] == "starting"


def test_a_restarted_engine_gets_its_grace_then_the_budget_ends_in_gave_up_and_stays_there():
    cfg = wd.config(dict(HEAD, grace=300, max_restarts=2))
    # probes 10 s apart, all failing: the 3rd (t=1020) restarts; the grace runs to t=1320, so the
    # probes before it count nothing and those at 1320, 1330, 1340 (the 33rd-35th) restart again;
    # after the second grace the budget (2 in 3600 s) is spent: no third restart, ever
    actions, state = run_probes(cfg, [False] * 200)
    assert actions.count("restart") == 2
    assert actions.index("restart") == 2 and actions.index("restart", 3) == 34
    assert state["state"] == "gave-up" and state["generation"] == 2
    # gave up is kept past the window (no loop of restarts an hour apart) until the engine answers
    later = state["gave_up_at"] + 2 * 3600
    state2, action = wd.decide(state, False, "timed out", later, cfg)
    assert action is None and state2["state"] == "gave-up"
    state3, action = wd.decide(state2, True, None, later + 10, cfg)
    assert action is None and state3["state"] == "watching" and state3["gave_up_at"] is None
    # the next restart keeps only the window's restarts: the list does not grow over months
    assert wd.gang_started(state3, later + 20, cfg)["restarts"] == [later + 20]
    line = wd.describe(dict(state, config=cfg), state["gave_up_at"] + 60)
    assert line.startswith("GAVE UP 60 s ago: the engine still does not answer (timed out) after 2 gang restart(s)")
    assert "re-deploy" in line


def test_paused_and_idle_restart_nothing_and_say_why():
    cfg = wd.config(HEAD)
    state = wd.new_state("head")
    for i in range(10):
        state, action = wd.decide(state, False, "timed out", 1000 + i, cfg, paused_by="pause file /x")
        assert action is None
    assert state["state"] == "paused" and state["failures"] == 0
    assert wd.describe(dict(state, config=cfg), 1010).startswith("paused (pause file /x): it restarts nothing")
    state, action = wd.decide(state, False, None, 2000, cfg, idle="nothing to watch: no container x")
    assert action is None and wd.describe(state, 2000).startswith("idle: nothing to watch: no container x")


def test_a_worker_runs_the_phases_it_missed_in_order_and_never_one_twice():
    assert wd.pending((0, "done"), (1, "stop")) == ["stop"]
    assert wd.pending((0, "done"), (1, "engine")) == ["stop", "ray", "engine"]  # came late: all of them
    assert wd.pending((1, "stop"), (1, "engine")) == ["ray", "engine"]
    assert wd.pending((1, "engine"), (1, "engine")) == []
    assert wd.pending((2, "done"), (1, "stop")) == []  # an older generation (a replay) does nothing


def test_a_signature_from_another_token_or_a_changed_generation_is_refused():
    doc = wd.sign(b"token-a", {"generation": 3, "phase": "ray"})
    assert wd.verified(b"token-a", doc)
    assert not wd.verified(b"token-b", doc)
    assert not wd.verified(b"token-a", dict(doc, generation=4))
    assert wd.verified(b"", {"generation": 1, "phase": "stop"})  # Ray auth off: no token to sign with


@pytest.mark.parametrize("change, message", [
    ({"role": "leader"}, "role is 'leader': expected head or worker"),
    ({"failures": "three"}, "watchdog_failures is 'three': expected a whole number"),
    ({"interval": 0}, "watchdog_interval is 0: expected 1 or more"),
    ({"max_restarts": -1}, "watchdog_max_restarts is -1: expected 0 or more"),
    ({"timeout": 60, "interval": 30}, "watchdog_timeout is 60 s, longer than the interval (30 s)"),
    ({"probe_url": ""}, "the head's agent needs probe_url"),
])
def test_wrong_settings_are_named_with_what_was_expected(change, message):
    with pytest.raises(wd.ConfigError) as err:
        wd.config(dict(HEAD, **change))
    assert message in str(err.value)


def test_the_container_runs_the_agent_as_root_with_the_socket_and_a_spec_that_follows_the_settings():
    o = {"name": "sparkops-watchdog", "image": "vllm:1", "agent_path": "/var/lib/sparkops/watchdog-agent.py",
         "serving_path": "/var/lib/sparkops/watchdog-serving.py", "agent_sha256": "ab", "state_dir": "/var/lib/sparkops", "config_dir": "/etc/sparkops",
         "restart_policy": "unless-stopped", "config": dict(HEAD, api_key_file=None)}
    spec = watchdog_container(o)
    assert spec["entrypoint"] == ["python3", "-u", "/opt/sparkops/watchdog.py"] and spec["user"] == "0:0"
    assert json.loads(spec["command"][0])["workers"] == ["spark2"] and "api_key_file" not in spec["command"][0]
    sources = dict((m["target"], (m["source"], m.get("read_only", False))) for m in spec["mounts"])
    assert sources["/var/run/docker.sock"] == ("/var/run/docker.sock", False)
    assert sources["/etc/sparkops"] == ("/etc/sparkops", True)
    # the judge of serving beside the agent, where the agent imports it from
    assert sources["/opt/sparkops/_serving.py"] == ("/var/lib/sparkops/watchdog-serving.py", True)
    assert len(spec["mounts"]) == 5  # /etc/sparkops/secrets is under /etc/sparkops: no mount of its own
    assert len(watchdog_container(dict(o, secrets_dir="/etc/sparkops/secrets"))["mounts"]) == 5
    moved = watchdog_container(dict(o, secrets_dir="/srv/secrets"))["mounts"][-1]
    assert moved == {"type": "bind", "source": "/srv/secrets", "target": "/srv/secrets", "read_only": True}
    assert watchdog_container(o)["labels"]["sparkops.spec"] == spec["labels"]["sparkops.spec"]
    assert watchdog_container(dict(o, config=dict(HEAD, failures=4)))["labels"]["sparkops.spec"] != \
        spec["labels"]["sparkops.spec"]
    with pytest.raises(SpecError) as err:
        watchdog_container(dict(o, config=dict(HEAD, max_restarts=-1)))
    assert "the watchdog's settings: watchdog_max_restarts is -1: expected 0 or more" in str(err.value)


# ------------------------------------------------------------------ one gang restart, end to end

class FakeDockerd(object):
    """A stand-in for dockerd on a unix socket: it answers /_ping with the API version it speaks
    (Docker 29's, 1.52) and the Engine API calls the agents make at that version (inspect, stop,
    restart, start), and records them as 'HOST VERB NAME' in arrival order (a call without the
    version is refused, and recorded too)."""

    def __init__(self, path, host, calls, containers, on_call=None):
        self.path, self.host, self.calls, self.containers = path, host, calls, containers
        self.on_call = on_call  # called with each recorded call, as the daemon answers it
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        thread = threading.Thread(target=self.serve)
        thread.daemon = True
        thread.start()

    def serve(self):
        while True:
            conn, dummy = self.sock.accept()
            with conn:
                head = conn.recv(65536).decode("utf-8").split("\r\n")[0]
                method, path = head.split(" ")[:2]
                parts = path.split("?")[0].strip("/").split("/")
                if parts == ["_ping"]:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nAPI-Version: 1.52\r\nContent-Length: 2\r\n"
                                 b"Connection: close\r\n\r\nOK")
                    continue
                if parts[0] != "v1.52":  # the version the daemon said it speaks, on every other call
                    status, body = 400, b'{"message": "unversioned or wrong API version"}'
                    self.calls.append("%s unversioned %s" % (self.host, path))
                    conn.sendall(("HTTP/1.1 %d X\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                                  % (status, len(body))).encode("utf-8") + body)
                    continue
                parts = parts[1:]
                name = parts[1]
                if name not in self.containers:
                    status, body = 404, b'{"message": "no such container"}'
                elif method == "GET":
                    status, body = 200, json.dumps({"State": {"Status": "running"}}).encode("utf-8")
                else:
                    self.calls.append("%s %s %s" % (self.host, parts[2], name))
                    if self.on_call:
                        self.on_call(self.calls[-1])
                    status, body = 204, b""
                conn.sendall(("HTTP/1.1 %d X\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                              % (status, len(body))).encode("utf-8") + body)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_worker(tmp_path, host, token_file, port, docker, ray_container="sparkops-ray-worker"):
    """A real worker agent in a thread, polling the head's agent on loopback; back once it wrote
    its state file (its first contact)."""
    cfg = wd.config({"role": "worker", "host": host, "ray_container": ray_container,
                     "engine_container": "sparkops-model-server", "state_file": str(tmp_path / (host + ".json")),
                     "token_file": str(token_file), "head_url": "http://127.0.0.1:%d" % port, "poll": 1})
    thread = threading.Thread(target=wd.Worker(cfg, docker).run)
    thread.daemon = True
    thread.start()
    deadline = time.time() + 20
    while time.time() < deadline and not os.path.exists(cfg["state_file"]):
        time.sleep(0.2)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_one_gang_restart_goes_head_workers_engine_and_a_worker_with_another_token_does_nothing(tmp_path, engine):
    """vLLM: the engine on the head only; SGLang: an engine container on every host (its ranks),
    stopped on every host before any Ray node restarts, started on every host after the last."""
    calls = []
    token, wrong = tmp_path / "token", tmp_path / "other-token"
    token.write_bytes(b"cluster-token\n")
    wrong.write_bytes(b"not-the-cluster-token\n")
    port = free_port()
    docker = {}
    ranks = ["sparkops-model-server"] if engine == "sglang" else []
    for host, names in (("spark1", ["sparkops-ray-head", "sparkops-model-server"]),
                        ("spark2", ["sparkops-ray-worker"] + ranks), ("spark3", ["sparkops-ray-worker"] + ranks)):
        FakeDockerd(str(tmp_path / (host + ".sock")), host, calls, names)
        docker[host] = wd.Docker(str(tmp_path / (host + ".sock")), timeout=5)
    head_cfg = wd.config(dict(HEAD, state_file=str(tmp_path / "head.json"), token_file=str(token), port=port,
                              workers=["spark2"], phase_timeout=20, poll=1))
    head = wd.Head(head_cfg, docker["spark1"])
    head.serve()
    for host, key in (("spark2", token), ("spark3", wrong)):
        start_worker(tmp_path, host, key, port, docker[host])
    head.gang()
    time.sleep(2.5)  # two more polls: a worker that is not signed to must still not act
    # the phases in order; within one, the hosts act at once (any order)
    hosts = ["spark1", "spark2"] if engine == "sglang" else ["spark1"]
    phases = [set("%s stop sparkops-model-server" % h for h in hosts), {"spark1 restart sparkops-ray-head"},
              {"spark2 restart sparkops-ray-worker"}, set("%s start sparkops-model-server" % h for h in hosts)]
    assert len(calls) == sum(len(p) for p in phases), calls
    at = 0
    for phase in phases:
        assert set(calls[at:at + len(phase)]) == phase, calls
        at += len(phase)
    state = json.loads((tmp_path / "head.json").read_text())
    assert state["generation"] == 1 and state["phase"] == "done" and state["gangs"][-1]["missing"] == []
    assert state["workers"]["spark2"] == {"generation": 1, "phase": "engine"}
    line = wd.describe(json.loads((tmp_path / "spark2.json").read_text()), time.time())
    assert line.startswith("follows the head's agent: gang restart 1 run here")
    other = json.loads((tmp_path / "spark3.json").read_text())
    assert "not signed with this cluster's Ray token" in other["last_error"] and other["generation"] is None


def test_without_ray_the_gang_stops_every_rank_then_starts_every_rank(tmp_path):
    """A native launch (no Ray container: ray_container empty): the ranks on every host stop, then -
    once every agent confirmed the stop and the empty ray phase - start again; nothing else is
    touched (a container named like a Ray node that is there is not restarted)."""
    calls = []
    token = tmp_path / "token"
    token.write_bytes(b"cluster-token\n")
    port = free_port()
    docker = {}
    for host in ("spark1", "spark2", "spark3"):
        # what a launch that moved from Ray left: a stopped *-previous Ray container is no business of the gang
        FakeDockerd(str(tmp_path / (host + ".sock")), host, calls, ["sparkops-model-server", "sparkops-ray-worker"])
        docker[host] = wd.Docker(str(tmp_path / (host + ".sock")), timeout=5)
    head = wd.Head(wd.config(dict(HEAD, ray_container="", state_file=str(tmp_path / "head.json"),
                                  token_file=str(token), port=port, workers=["spark2", "spark3"],
                                  phase_timeout=20, poll=1)), docker["spark1"])
    head.serve()
    for host in ("spark2", "spark3"):
        start_worker(tmp_path, host, token, port, docker[host], ray_container="")
    head.gang()
    hosts = ("spark1", "spark2", "spark3")
    assert set(calls[:3]) == set("%s stop sparkops-model-server" % h for h in hosts), calls
    assert set(calls[3:]) == set("%s start sparkops-model-server" % h for h in hosts) and len(calls) == 6, calls
    state = json.loads((tmp_path / "head.json").read_text())
    assert state["phase"] == "done" and state["gangs"][-1]["missing"] == [], state
    assert state["workers"] == dict((h, {"generation": 1, "phase": "engine"}) for h in ("spark2", "spark3"))


def test_a_deploy_that_takes_the_lock_in_the_middle_of_a_gang_restart_gets_the_rest_of_it(tmp_path):
    """The head's engine stopped, then a deploy takes the cluster's lock (written as the head's
    dockerd answers the stop): no Ray node restarts and no engine starts - the deploy recreates what
    it needs - and both agents say the gang was abandoned, and why."""
    calls = []
    token, lock = tmp_path / "token", tmp_path / "deploy.lock"
    token.write_bytes(b"cluster-token\n")
    holder = {"playbook": "deploy.yml", "user": "ops", "controller": "awx-1", "since": 1764680000}

    def deploy_takes_the_lock(call):
        if call == "spark1 stop sparkops-model-server":
            lock.write_text(json.dumps(holder))

    port = free_port()
    FakeDockerd(str(tmp_path / "spark1.sock"), "spark1", calls, ["sparkops-ray-head", "sparkops-model-server"],
                on_call=deploy_takes_the_lock)
    FakeDockerd(str(tmp_path / "spark2.sock"), "spark2", calls, ["sparkops-ray-worker", "sparkops-model-server"])
    head = wd.Head(wd.config(dict(HEAD, state_file=str(tmp_path / "head.json"), token_file=str(token), port=port,
                                  lock_file=str(lock), workers=["spark2"], phase_timeout=20, poll=1)),
                   wd.Docker(str(tmp_path / "spark1.sock"), timeout=5))
    head.serve()
    start_worker(tmp_path, "spark2", token, port, wd.Docker(str(tmp_path / "spark2.sock"), timeout=5))
    head.gang()
    time.sleep(2.5)  # two more polls of the worker
    assert sorted(calls) == ["spark1 stop sparkops-model-server", "spark2 stop sparkops-model-server"], calls
    state = json.loads((tmp_path / "head.json").read_text())
    assert state["phase"] == wd.ABANDONED and state["state"] == "paused"
    assert state["last_error"] == ("gang restart 1 abandoned before its phase ray: a deploy or teardown holds the "
                                   "cluster's lock (deploy.yml, ops@awx-1, since 2025-12-02T12:53:20Z)")
    assert state["gangs"][-1]["abandoned"].startswith("before ray: a deploy or teardown holds")
    line = wd.describe(json.loads((tmp_path / "spark2.json").read_text()), time.time())
    assert line.startswith("follows the head's agent: gang restart 1 abandoned (a deploy or teardown took the lock)")
    # the next gang (the lock given back) runs whole on the worker that saw this one abandoned
    assert wd.pending((1, wd.ABANDONED), (2, "engine")) == ["stop", "ray", "engine"]
    assert wd.pending((1, "stop"), (1, wd.ABANDONED)) == []


def test_tokens_that_still_flow_make_a_slow_answer_busy_not_a_failure(fixture_text):
    """A completion queued behind a full batch times out while the engine generates: the counters
    in the real releases' exposition (the metrics fixtures) tell the two apart."""
    first = wd.generated_tokens(fixture_text("engine-metrics", "vllm-0.17.0-busy-1.txt"))
    second = wd.generated_tokens(fixture_text("engine-metrics", "vllm-0.17.0-busy-2.txt"))
    assert first == 40112.0 and second > first
    assert wd.generated_tokens(fixture_text("engine-metrics", "sglang-0.5.4-busy.txt")) > 0
    assert wd.generated_tokens("# HELP x\nnode_load1 0.5\n") is None
    cfg = wd.config(HEAD)
    state = wd.new_state("head")
    for i in range(10):
        state, action = wd.decide(state, False, "no completion in 5 s", 1000 + i * 10, cfg, busy=second - first)
        assert action is None
    assert state["state"] == "busy" and state["failures"] == 0
    assert wd.describe(dict(state, config=cfg), 1100).startswith(
        "busy: no completion in 5 s; yet the engine generated %d token(s) since the last look" % (second - first))
    # the tokens stop: failures count again
    actions, state = run_probes(cfg, [False] * 3, start=1200, state=state)
    assert actions == [None, None, "restart"]


def test_the_agent_reads_the_counters_module_utils_metrics_reads():
    from ansible_collections.sparkops.inference.plugins.module_utils._metrics import SERIES
    assert set(wd.TOKEN_COUNTERS) == set(SERIES[e]["generation_tokens"] for e in ("vllm", "sglang"))


def test_an_engine_that_docker_or_a_reboot_just_started_gets_its_grace_too():
    """After a power cut Docker starts every container at boot and the engine loads its weights for
    minutes: the engine container's StartedAt (Docker's own words) opens the same grace as a gang."""
    cfg = wd.config(dict(HEAD, grace=900))
    started = wd.started_at("2026-12-02T10:12:32.123456789Z")
    assert started == 1796206352.0
    assert wd.started_at("0001-01-01T00:00:00Z") < 0 and wd.started_at(None) is None
    state = wd.new_state("head")
    for i in range(20):  # 10 minutes of failed answers while it loads: nothing counts
        state, action = wd.decide(state, False, "connection refused", started + 30 * i, cfg, started=started)
        assert action is None and state["state"] == "starting" and state["failures"] == 0
    assert wd.describe(dict(state, config=cfg), started + 600).startswith(
        "starting: the engine has not answered since it started 600 s ago (it loads its weights; "
        "failures count after 900 s)")
    actions = []
    for i in range(3):  # past the grace, failures count
        state, action = wd.decide(state, False, "connection refused", started + 900 + 30 * i, cfg, started=started)
        actions.append(action)
    assert actions == [None, None, "restart"]


def test_the_probe_counts_silence_and_5xx_and_takes_a_4xx_as_alive(tmp_path):
    """probe() against a local HTTP server in the engine's place: a completion, a 401 (a wrong key:
    alive, restarting would not mend it), a 500 (vLLM's dead engine) and silence past the timeout."""
    import http.server  # pylint: disable=import-outside-toplevel
    answers = {"/ok/v1/completions": (200, b'{"choices": [{"text": "!"}]}'), "/key/v1/completions": (401, b"{}"),
               "/dead/v1/completions": (500, b"{}"), "/empty/v1/completions": (200, b'{"choices": []}')}

    class Engine(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # pylint: disable=invalid-name
            self.rfile.read(int(self.headers["Content-Length"]))
            if self.path not in answers:
                time.sleep(2)  # silent past the probe's timeout
                return
            code, body = answers[self.path]
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Engine)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    base = "http://127.0.0.1:%d" % server.server_address[1]
    try:
        def probe(path, timeout=30):
            # the servers that answer do so at once: a long timeout keeps a starved CPU (the controller
            # matrix runs these tests niced beside the lanes) from turning an answer into silence
            return wd.probe(wd.config(dict(HEAD, probe_url=base + path, timeout=timeout, interval=60)), "a-key")
        assert probe("/ok/v1/completions") == (True, None)
        ok, note = probe("/key/v1/completions")
        assert ok and note.startswith("the engine answers, but HTTP 401 to the watchdog's completion")
        dead = "HTTP 500 from %s/dead/v1/completions: Internal Server Error" % base
        assert probe("/dead/v1/completions") == (False, dead)
        assert probe("/empty/v1/completions") == (False, "an answer without choices from %s/empty/v1/completions" % base)
        ok, why = probe("/hung/v1/completions", timeout=1)
        assert not ok and why.startswith("no completion in 1 s from %s/hung/v1/completions: " % base)
    finally:
        server.shutdown()


def test_the_agent_on_a_host_imports_the_judge_mounted_beside_it(tmp_path):
    """On a host the agent is /opt/sparkops/watchdog.py with _serving.py beside it and no Ansible:
    run as there (python3 -I, the files under the names the container mounts them at), it loads
    the judge from its own directory."""
    import shutil  # pylint: disable=import-outside-toplevel
    import subprocess  # pylint: disable=import-outside-toplevel
    here = os.path.join(os.path.dirname(os.path.abspath(wd.__file__)))
    shutil.copy(os.path.join(here, "_watchdog.py"), str(tmp_path / "watchdog.py"))
    shutil.copy(os.path.join(here, "_serving.py"), str(tmp_path / "_serving.py"))
    out = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, %r); import watchdog; "
                          "print(watchdog._serving.__file__)" % str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == str(tmp_path / "_serving.py"), out.stdout
