# -*- coding: utf-8 -*-
"""serve_check's HTTP against a real local server: redirects are not followed, bodies in
messages are cut and quoted."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading

from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible_collections.sparkops.inference.tests.unit.compat import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import serve_check


class Handler(BaseHTTPRequestHandler):
    hits = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        Handler.hits.append(self.path)
        if self.path == "/health":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.end_headers()
            return
        body = ("x" * 5000).encode()
        self.send_response(500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    srv = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    Handler.hits[:] = []
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()


def test_a_redirect_is_named_and_not_followed(server):
    code, text = serve_check.http("GET", server + "/health")
    assert code == 302
    assert text == 'a redirect to "http://169.254.169.254/latest/meta-data/" (not followed)'
    assert Handler.hits == ["/health"]  # nothing else was asked for


def test_a_long_body_is_cut_and_quoted(server):
    code, text = serve_check.http("GET", server + "/v1/models")
    assert code == 500 and len(text) == 5000
    said = serve_check.quoted(text)
    assert said == json.dumps("x" * 200) + " (4800 more characters cut)"
    assert serve_check.quoted('a "b"') == '"a \\"b\\""'


class AuthHandler(BaseHTTPRequestHandler):
    """/v1 needs the bearer key, as vLLM's AuthenticationMiddleware; the 401 body echoes what
    was sent (a hostile or careless server), so a message that quotes it must cut the key."""
    key = "sk-canary-0123456789"

    def log_message(self, *args):
        pass

    def do_GET(self):
        sent = self.headers.get("Authorization") or ""
        ok = sent == "Bearer " + self.key
        body = json.dumps({"data": [{"id": "m"}]} if ok else {"error": "Unauthorized", "got": sent}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class FakeModule(object):
    def __init__(self):
        self.no_log_values = set()


@pytest.fixture
def auth_server(monkeypatch):
    monkeypatch.setattr(serve_check, "HEADERS", {"Content-Type": "application/json"})
    monkeypatch.setattr(serve_check, "SECRETS", [])
    srv = HTTPServer(("127.0.0.1", 0), AuthHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()


def test_the_api_key_from_its_file_is_sent_and_never_quoted(auth_server, tmp_path):
    code, text = serve_check.http("GET", auth_server + "/v1/models")
    assert code == 401
    key_file = tmp_path / "engine-api-key"
    key_file.write_text(AuthHandler.key + "\n")
    module = FakeModule()
    serve_check.load_api_key(module, str(key_file))
    assert module.no_log_values == {AuthHandler.key}  # Ansible masks it in any result too
    assert serve_check.model_ids(*serve_check.http("GET", auth_server + "/v1/models")) == ["m"]
    echoed = '{"error": "Unauthorized", "got": "Bearer %s"}' % AuthHandler.key
    assert AuthHandler.key not in serve_check.quoted(echoed) and "(secret)" in serve_check.quoted(echoed)


def test_no_key_file_sends_no_key(auth_server, tmp_path):
    serve_check.load_api_key(FakeModule(), str(tmp_path / "absent"))
    serve_check.load_api_key(FakeModule(), "")
    assert serve_check.http("GET", auth_server + "/v1/models")[0] == 401
    assert "Authorization" not in serve_check.HEADERS


def test_an_address_that_is_not_the_hosts_is_named():
    assert serve_check.bind_problem("127.0.0.1") is None
    assert serve_check.bind_problem("0.0.0.0") is None
    # TEST-NET-3 (RFC 5737): never an address of a test machine
    assert serve_check.bind_problem("203.0.113.77").startswith("is not an address of this host (")
    assert serve_check.bind_problem("no-such-host.invalid").startswith("does not resolve")


def test_where_a_check_reaches_the_engine():
    doc = {"Config": {"Cmd": ["/opt/models/m", "--host", "10.77.0.11", "--port=8001"]}}
    assert serve_check.started_with(doc, "--host") == "10.77.0.11"
    assert serve_check.started_with(doc, "--port") == "8001"
    assert serve_check.started_with(None, "--host") is None
    assert [serve_check.connect_address(a) for a in ("0.0.0.0", "::", "10.77.0.11", "fd00::5", None)] == [
        "127.0.0.1", "[::1]", "10.77.0.11", "[fd00::5]", "127.0.0.1"]
    # what the caller does not give comes from the container (the rollback's engine from before
    # this run may listen elsewhere than this run asks); given, it wins; neither: 127.0.0.1:8000
    assert serve_check.engine_base({"address": None, "port": None}, doc) == "http://10.77.0.11:8001"
    assert serve_check.engine_base({"address": "0.0.0.0", "port": 8000}, doc) == "http://127.0.0.1:8000"
    assert serve_check.engine_base({"address": None, "port": None}, None) == "http://127.0.0.1:8000"
    assert serve_check.engine_base({"address": None, "port": None},
                                   {"Config": {"Cmd": ["--port", "$PORT"]}}) == "http://127.0.0.1:8000"


class Failed(Exception):
    pass


class Exited(Exception):
    """exit_json: the module's result."""


class StartingModule(FakeModule):
    def __init__(self, **params):
        FakeModule.__init__(self)
        self.params = dict({"container": "sparkops-model-server", "timeout": 30, "log_lines": 5,
                            "served_model_name": "m", "progress_interval": 0, "waited": 0,
                            "restart_count": None}, **params)

    def fail_json(self, msg, **kwargs):
        raise Failed(msg)

    def exit_json(self, **kwargs):
        raise Exited(kwargs)


class RestartingEngine(object):
    """What `docker inspect` shows of an engine with restart policy unless-stopped that exits 7
    at once: running (count 0), then restarting with the exit code kept, count grown."""

    def __init__(self):
        self.states = [({"Running": True, "Restarting": False, "ExitCode": 0}, 0),
                       ({"Running": True, "Restarting": True, "ExitCode": 7}, 4)]

    def container(self, name):
        state, count = self.states[0] if len(self.states) == 1 else self.states.pop(0)
        return {"State": state, "RestartCount": count}

    def logs(self, name, lines):
        return ["CUDA out of memory (pretend)"] * 2


def test_an_engine_docker_restarts_is_named_with_its_exit_code_and_restarts(monkeypatch):
    monkeypatch.setattr(serve_check, "SECRETS", [])
    monkeypatch.setattr(serve_check.time, "sleep", lambda s: None)
    with pytest.raises(Failed) as err:
        # nothing listens on port 9 (discard) of loopback here: /health is refused
        serve_check.wait_served(StartingModule(), RestartingEngine(), "http://127.0.0.1:9")
    msg = str(err.value)
    assert msg.startswith("the engine exited during start (container sparkops-model-server, exit code 7) on ")
    assert "; Docker restarted it 4 time(s). Its last log lines:\nCUDA out of memory (pretend)" in msg


class LoadingEngine(object):
    """An engine that runs and prints, and has not opened its port yet (a model loading)."""

    def __init__(self, count=0):
        self.count = count

    def container(self, name):
        return {"State": {"Running": True, "Restarting": False, "ExitCode": 0}, "RestartCount": self.count}

    def logs(self, name, lines):
        return ["INFO starting", "Loading safetensors checkpoint shards:  45% Completed | 18/40", ""][-lines:]


def test_a_wait_with_progress_hands_back_where_it_stands_until_the_timeout(monkeypatch):
    """With progress_interval, a call returns 'waiting' at the interval's end - the seconds over
    every call, what answered, the last log line, the restart count it began with - and the call
    that reaches the timeout fails with the whole timeout's message."""
    monkeypatch.setattr(serve_check, "SECRETS", [])
    monkeypatch.setattr(serve_check.time, "sleep", lambda s: None)
    clock = iter(range(1000, 2000))
    monkeypatch.setattr(serve_check.time, "time", lambda: float(next(clock)))
    with pytest.raises(Exited) as res:
        serve_check.wait_served(StartingModule(progress_interval=3, waited=10), LoadingEngine(2), "http://127.0.0.1:9")
    out = res.value.args[0]
    assert out["waiting"] is True and out["restart_count"] == 2 and 13 <= out["waited"] <= 16, out
    assert out["last"].startswith("/health answered ") and out["endpoint"] == "http://127.0.0.1:9"
    assert out["log"] == "Loading safetensors checkpoint shards:  45% Completed | 18/40"
    # the next call, where the wait stood: 30 s in all have passed before its interval ends
    with pytest.raises(Failed) as err:
        serve_check.wait_served(StartingModule(progress_interval=30, waited=28, restart_count=2), LoadingEngine(2),
                                "http://127.0.0.1:9")
    assert str(err.value).startswith("the engine did not serve within 30 s on ")
    # Docker restarted the engine between two calls: an exit, named at once
    with pytest.raises(Failed) as err:
        serve_check.wait_served(StartingModule(progress_interval=3, waited=6, restart_count=2), LoadingEngine(3),
                                "http://127.0.0.1:9")
    assert "; Docker restarted it 3 time(s)" in str(err.value)


class MetricsHandler(BaseHTTPRequestHandler):
    """/metrics answers the vLLM fixtures in turn (two looks), as a busy engine would."""
    bodies = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = MetricsHandler.bodies.pop(0).encode() if MetricsHandler.bodies else b""
        self.send_response(200 if body else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def metrics_server():
    srv = HTTPServer(("127.0.0.1", 0), MetricsHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()


def test_status_reads_the_engine_load_from_two_looks_at_metrics(metrics_server, fixture_text):
    MetricsHandler.bodies[:] = [fixture_text("engine-metrics", "vllm-0.17.0-busy-1.txt"),
                                fixture_text("engine-metrics", "vllm-0.17.0-busy-2.txt")]
    load = serve_check.look_at_metrics(metrics_server, 0.2)
    assert (load["engine"], load["running"], load["waiting"], load["kv_cache_usage"], load["error"]) == \
        ("vllm", 4.0, 2.0, 0.64, None)
    # 420 tokens in the time between the looks (0.2 s and the request): between 0 and 2100 tokens/s
    assert 0 < load["tokens_per_second"] <= 2100


def test_status_names_why_there_are_no_figures(metrics_server):
    MetricsHandler.bodies[:] = []
    load = serve_check.look_at_metrics(metrics_server, 0)
    assert load["error"] == "GET /metrics: HTTP 404" and load["running"] is None
    MetricsHandler.bodies[:] = ["process_cpu_seconds_total 3\n"]
    load = serve_check.look_at_metrics(metrics_server, 0)
    assert load["error"] == "GET /metrics answered without vLLM's or SGLang's series"


def test_a_negative_timeout_is_refused_before_anything_is_asked(capsys, tmp_path):
    # docker_cli is a path that does not exist: the module must stop before it runs it
    with patch_module_args({"container": "sparkops-model-server", "timeout": -5,
                            "docker_cli": str(tmp_path / "no-docker")}):
        with pytest.raises(SystemExit):
            serve_check.main()
    out = json.loads(capsys.readouterr().out)
    assert out["failed"] is True
    assert out["msg"] == ("timeout is -5: it is the seconds to wait for the engine to serve, 0 or more "
                          "(0 looks once)")


def test_status_says_why_the_engine_lists_no_model(auth_server, tmp_path):
    """A key the engine refuses (a rotation that did not finish), no key where one is wanted, an
    error page, nothing listening: each said, the key never in it."""
    key_file = tmp_path / "engine-api-key"

    def answer(code, text, api_key_file):  # as phase_status calls it: the list parsed from the same answer
        return serve_check.models_answer(code, text, serve_check.model_ids(code, text), api_key_file)

    code, text = serve_check.http("GET", auth_server + "/v1/models")
    assert answer(code, text, str(key_file)) == (
        "HTTP 401 - the engine wants an API key and %s holds none: it was started with one (its secret "
        "files changed after it started - a deploy that did not finish, or by hand); deploy.yml starts it again "
        "as sparkops_engine_api_key says" % key_file)
    key_file.write_text("key-two\n")
    serve_check.load_api_key(FakeModule(), str(key_file))
    code, text = serve_check.http("GET", auth_server + "/v1/models")
    said = answer(code, text, str(key_file))
    assert said.startswith("HTTP 401 - the engine refuses the API key in %s: it was started with another one"
                           % key_file) and "key-two" not in said
    serve_check.HEADERS["Authorization"] = "Bearer " + AuthHandler.key
    code, text = serve_check.http("GET", auth_server + "/v1/models")
    assert answer(code, text, str(key_file)) is None
    assert answer(200, '{"data": []}', "") == 'HTTP 200 "{\\"data\\": []}"'
    assert answer(500, "x" * 300, "") == 'HTTP 500 %s (180 more characters cut)' % json.dumps("x" * 120)
    assert answer(None, "[Errno 111] Connection refused", "") == \
        "no answer ([Errno 111] Connection refused)"


def precheck(capsys, where, executable, smi_report, **extra):
    """serve_check's precheck where no engine runs (docker knows no container), with the nvidia-smi
    found on PATH printing a captured report, and this machine's /proc/meminfo."""
    import os  # pylint: disable=import-outside-toplevel
    fixtures = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures")
    where.mkdir()
    tools = where / "bin"
    tools.mkdir()
    executable(tools / "nvidia-smi", '#!/bin/sh\ncat "%s"\n' % os.path.join(fixtures, *smi_report))
    args = dict({"phase": "precheck", "container": "sparkops-model-server", "check_port": False,
                 "docker_cli": executable(where / "docker", "#!/bin/sh\nexit 1\n")}, **extra)
    old_path = os.environ["PATH"]
    os.environ["PATH"] = str(tools) + os.pathsep + old_path
    try:
        with patch_module_args(args):
            with pytest.raises(SystemExit):
                serve_check.main()
    finally:
        os.environ["PATH"] = old_path
    return json.loads(capsys.readouterr().out)


def test_the_look_before_the_start_judges_the_memory_as_the_admission_would(capsys, tmp_path, executable):
    """The deploy's look at the engine says whether the memory the engine will ask for is free now;
    the memory_admission module runs only where it says no. From nvidia-smi as captured on the lent
    H200 while another process held 40 GiB of GPU 0, it must decide what the admission decided
    there (0.70 passes, 0.71 does not: test_memory_admission), and never fail the look itself."""
    held = ("h200-admission", "module", "nvidia-smi-q-held-40g-gpu0.xml")
    for utilization, ok in ((0.7, True), (0.71, False)):
        res = precheck(capsys, tmp_path / str(utilization), executable, held, admit=utilization)
        assert res.get("failed") is not True, res
        adm = res["admission"]
        assert adm["ok"] is ok and adm["unified_memory"] is False and adm["reachable"] == 0.70, adm
        assert res["container"] is None
    res = precheck(capsys, tmp_path / "none", executable, held)
    assert "admission" not in res  # asked only where the deploy admits engines (model_server_memory_admission)
