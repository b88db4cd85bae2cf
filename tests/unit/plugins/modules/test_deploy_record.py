# -*- coding: utf-8 -*-
"""deploy_record run in-process against files in a temp dir and a fake docker CLI that prints a
`docker container inspect` document of the lab's Ray worker (and exits 1 for the absent
engine, as Docker does): record, re-record (no change), check mode, compare; the compare's memory
and serve questions against a fake docker and a local HTTP server that answers as vLLM does."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat
import threading

from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible_collections.sparkops.inference.tests.unit.compat import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import deploy_record

WORKER = {"Id": "5b1d", "Name": "/sparkops-ray-worker", "Image": "sha256:3634",
          "State": {"Status": "running", "Running": True, "StartedAt": "2026-12-02T00:38:01Z"},
          "Config": {"Image": "10.77.0.5:5000/sparkops/lab-vllm:0.17.0", "Entrypoint": ["ray", "start"],
                     "Cmd": ["--block"], "Env": ["A=1"], "Labels": {}},
          "HostConfig": {"RestartPolicy": {"Name": "unless-stopped"}}}


def run_module(capsys, args, check=False):
    if check:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            deploy_record.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def host(tmp_path):
    docs = tmp_path / "inspect.json"
    docs.write_text(json.dumps([WORKER]))
    docker = tmp_path / "docker"
    docker.write_text('#!/bin/sh\ncat "%s"\necho "Error: No such container: sparkops-model-server" >&2\nexit 1\n' % docs)
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    env = tmp_path / "fabric.env"
    env.write_text("NCCL_SOCKET_IFNAME=enp1s0f1np1\n")
    token = tmp_path / "ray-token"
    token.write_text("t0ken")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    path = str(tmp_path / "state" / "deployed.json")
    args = {"mode": "record", "path": path, "docker_cli": str(docker),
            "containers": ["sparkops-ray-worker", "sparkops-model-server"],
            "files": [{"path": str(env)}, {"path": str(token), "secret": True}],
            "model_path": str(model), "deployed": {"image": "10.77.0.5:5000/sparkops/lab-vllm:0.17.0"}}
    return {"args": args, "path": path, "env": env, "token": token, "docker": str(docker)}


def test_record_once_then_no_change_then_drift_named(capsys, host):
    check = run_module(capsys, host["args"], check=True)
    assert check["changed"] is True and not os.path.exists(host["path"])
    first = run_module(capsys, host["args"])
    assert first["changed"] is True
    assert oct(os.stat(host["path"]).st_mode & 0o777) == "0o600"
    assert "t0ken" not in open(host["path"]).read()
    assert first["record"]["containers"]["sparkops-model-server"] is None
    again = run_module(capsys, host["args"])
    assert again["changed"] is False
    compare = {"mode": "compare", "path": host["path"], "docker_cli": host["docker"]}
    same = run_module(capsys, compare)
    assert same["in_sync"] is True and same["lines"] == [] and same["changed"] is False
    assert same["deployed"]["image"].endswith("lab-vllm:0.17.0")
    host["env"].write_text("NCCL_SOCKET_IFNAME=eth9\n")
    host["token"].write_text("changed by hand")
    moved = run_module(capsys, compare)
    assert moved["in_sync"] is False
    assert moved["lines"] == ["file %s: env NCCL_SOCKET_IFNAME was enp1s0f1np1, now eth9" % host["env"],
                              "file %s: content changed since the deploy (sha256 %s... now %s...)" % (
                                  host["token"], moved["drift"][1]["recorded"][7:19], moved["drift"][1]["now"][7:19])]
    assert "changed by hand" not in json.dumps(moved)


def test_refresh_takes_the_start_times_of_the_containers_a_rollback_started_again(capsys, host, tmp_path):
    """The worker started again under its recorded ID: compare names its start time until refresh
    takes it (check mode writes nothing); a file the failed run changed still differs afterwards;
    a container replaced (another ID) or stopped is not taken."""
    run_module(capsys, host["args"])
    compare = {"mode": "compare", "path": host["path"], "docker_cli": host["docker"]}
    refresh = {"mode": "refresh", "path": host["path"], "docker_cli": host["docker"]}
    docs = tmp_path / "inspect.json"
    docs.write_text(json.dumps([dict(WORKER, State=dict(WORKER["State"], StartedAt="2026-12-02T01:02:03Z"))]))
    host["token"].write_text("a token the failed run wrote")
    moved = run_module(capsys, compare)
    assert [d["key"] for d in moved["drift"]] == ["started_at", "sha256"], moved["drift"]
    dry = run_module(capsys, refresh, check=True)
    assert dry["changed"] is True and dry["refreshed"] == ["sparkops-ray-worker"]
    assert run_module(capsys, compare)["drift"] == moved["drift"]
    done = run_module(capsys, refresh)
    assert done["changed"] is True and done["refreshed"] == ["sparkops-ray-worker"]
    assert "2026-12-02T01:02:03Z" in done["diff"]["after"] and oct(os.stat(host["path"]).st_mode & 0o777) == "0o600"
    after = run_module(capsys, compare)
    assert [d["key"] for d in after["drift"]] == ["sha256"]  # the token is still the failed run's
    assert run_module(capsys, refresh)["changed"] is False
    for other in (dict(WORKER, Id="9e7f"), dict(WORKER, State=dict(WORKER["State"], Status="exited"))):
        docs.write_text(json.dumps([dict(other, State=dict(other["State"], StartedAt="2026-12-02T02:00:00Z"))]))
        res = run_module(capsys, refresh)
        assert res["changed"] is False and res["refreshed"] == [], other
    res = run_module(capsys, dict(refresh, path=str(tmp_path / "none.json")))
    assert res["changed"] is False and res["refreshed"] == [] and res["recorded_at"] is None
    assert not os.path.exists(str(tmp_path / "none.json"))


def test_compare_without_a_record_says_so(capsys, host):
    res = run_module(capsys, {"mode": "compare", "path": host["path"], "docker_cli": host["docker"]})
    assert res["in_sync"] is False and res.get("failed") is not True
    assert res["lines"] == ["no deploy is recorded here (%s): nothing to compare with - deploy first" % host["path"]]


def test_inputs_digest_and_images_recorded_then_compared(capsys, host, tmp_path):
    """The re-run check's two extra questions, through the module: the digest is kept as given,
    each image's ID is asked of Docker (null where the image is not on the host)."""
    docker = tmp_path / "docker-images"
    docker.write_text('#!/bin/sh\ncase "$*" in\n'
                      '  "image inspect --format {{.Id}} reg/vllm:0.17.0") echo sha256:4261 ;;\n'
                      '  "image inspect"*) echo "Error: No such image: $5" >&2; exit 1 ;;\n'
                      '  *) exec "%s" "$@" ;;\nesac\n' % host["docker"])
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    args = dict(host["args"], docker_cli=str(docker), inputs_digest="a" * 64,
                images=["reg/vllm:0.17.0", "reg/sglang:0.5.10"])
    first = run_module(capsys, args)
    assert first["record"]["inputs_digest"] == "a" * 64
    assert first["record"]["images"] == {"reg/vllm:0.17.0": "sha256:4261", "reg/sglang:0.5.10": None}
    compare = {"mode": "compare", "path": host["path"], "docker_cli": str(docker)}
    assert run_module(capsys, dict(compare, inputs_digest="a" * 64, images=args["images"]))["in_sync"] is True
    assert run_module(capsys, compare)["in_sync"] is True  # drift.yml asks neither
    other = run_module(capsys, dict(compare, inputs_digest="b" * 64, images=["reg/vllm:0.17.0", "reg/other:1"]))
    assert other["in_sync"] is False
    assert [d["what"] for d in other["drift"]] == ["inputs", "image reg/other:1"]


class Engine(BaseHTTPRequestHandler):
    """An OpenAI-compatible answer as vLLM gives it, behind a bearer key; `answer` False: the
    engine is up and lists the model, but its completion fails (a 500 that echoes the key)."""
    key = "sk-canary-0123456789"
    answer = True
    hits = []

    def log_message(self, *args):
        pass

    def _send(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        Engine.hits.append(self.path)
        if self.headers.get("Authorization") != "Bearer " + self.key:
            return self._send(401, {"error": "Unauthorized"})
        self._send(200, {"data": [{"id": "qwen3.5-lab"}]} if self.path == "/v1/models" else {})

    def do_POST(self):
        Engine.hits.append(self.path)
        asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if Engine.answer and asked["model"] == "qwen3.5-lab":
            return self._send(200, {"choices": [{"text": " Paris."}]})
        self._send(500, {"error": "CUDA error", "sent": self.headers.get("Authorization")})


@pytest.fixture
def engine():
    srv = HTTPServer(("127.0.0.1", 0), Engine)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Engine.hits[:] = []
    Engine.answer = True
    yield srv.server_address[1]
    srv.shutdown()


def test_compare_asks_what_the_memory_phase_would_stop_then_the_engine(capsys, host, tmp_path, engine):
    """The re-run check in one call: the record first, then what gpu_memory would stop (an old
    service started again since), then one completion - each only when nothing was found before
    it; the API key is sent, and neither returned nor quoted."""
    old = tmp_path / "old-vllm.running"
    docker = tmp_path / "docker-old"
    docker.write_text('#!/bin/sh\ncase "$*" in\n'
                      '  "container inspect old-vllm") r=false; [ -f "%s" ] && r=true\n'
                      '    echo "[{\\"Id\\": \\"0ld\\", \\"Name\\": \\"/old-vllm\\", \\"State\\": {\\"Running\\": $r}}]" ;;\n'
                      '  ps*) exit 0 ;;\n'
                      '  *) exec "%s" "$@" ;;\nesac\n' % (old, host["docker"]))
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    key = tmp_path / "engine-api-key"
    key.write_text(Engine.key + "\n")
    run_module(capsys, dict(host["args"], docker_cli=str(docker)))
    compare = {"mode": "compare", "path": host["path"], "docker_cli": str(docker),
               "memory": {"containers": ["old-vllm"], "nvidia_smi_path": str(tmp_path / "no-nvidia-smi")},
               "serve": {"port": engine, "served_model_name": "qwen3.5-lab", "api_key_file": str(key)}}
    same = run_module(capsys, compare)
    assert same["in_sync"] is True and same["lines"] == [] and same["holders"] == []
    assert same["completion"] == " Paris." and same["endpoint"] == "http://127.0.0.1:%d/v1" % engine
    assert Engine.hits == ["/health", "/v1/models", "/v1/completions"]

    Engine.answer = False
    failed = run_module(capsys, compare)
    assert failed["in_sync"] is False and failed["completion"] is None
    said = json.dumps(json.dumps({"error": "CUDA error", "sent": "Bearer (secret)"}))  # the key cut out, quoted
    assert failed["lines"] == ["the engine at http://127.0.0.1:%d did not answer the check: a completion failed "
                               "(HTTP 500): %s" % (engine, said)]
    assert Engine.key not in json.dumps(failed)

    old.write_text("")  # the old engine was started again by hand
    Engine.hits[:] = []
    back = run_module(capsys, compare)
    assert back["in_sync"] is False and [h["name"] for h in back["holders"]] == ["old-vllm"]
    assert back["lines"] == ["the GPU memory phase would stop old-vllm"]
    assert Engine.hits == [] and "completion" not in back  # the engine is not asked then

    host["env"].write_text("NCCL_SOCKET_IFNAME=eth9\n")
    moved = run_module(capsys, compare)
    assert moved["lines"] == ["file %s: env NCCL_SOCKET_IFNAME was enp1s0f1np1, now eth9" % host["env"]]
    assert "holders" not in moved and Engine.hits == []  # drift first: nothing more is asked
