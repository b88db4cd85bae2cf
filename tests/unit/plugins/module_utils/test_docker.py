# -*- coding: utf-8 -*-
# The Docker layer: platform strings as Docker compares them, inspect documents (captured on the
# lab, and shaped as an arm64 host with the containerd store prints them), docker ps rows, and
# the Engine API's version negotiation against a daemon on a unix socket that answers as
# Docker 20.10 (the captured /_ping) or as Docker 29 (refuses API versions below 1.44).
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket
import threading

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils import _docker
from ansible_collections.sparkops.inference.plugins.module_utils._docker import (
    DockerError,
    EngineApi,
    architecture,
    host_platform,
    image_facts,
    negotiate,
    parse_platform,
    parse_ps_json,
    platform_text,
    same_platform,
)


@pytest.mark.parametrize("machine,arch", [("x86_64", "amd64"), ("aarch64", "arm64"), ("arm64", "arm64"),
                                          ("AARCH64", "arm64"), ("riscv64", "riscv64"), ("armv7l", "arm")])
def test_architecture(machine, arch):
    assert architecture(machine) == arch
    assert host_platform(machine) == "linux/" + arch


@pytest.mark.parametrize("image,host,same", [
    ("linux/arm64/v8", "linux/arm64", True),      # what an arm64 host prints vs the host itself
    ("linux/arm64", "linux/arm64/v8", True),
    ("linux/arm64/v8", "linux/aarch64", True),
    ("linux/arm64/8", "linux/arm64/v8", True),    # Docker's normalisation of "8"
    ("linux/arm64/v8", "linux/arm64/v9", False),
    ("linux/amd64", "linux/arm64", False),
    ("linux/arm64", "linux/amd64", False),
    ("windows/amd64", "linux/amd64", False),
    ("linux/arm/v7", "linux/arm/v6", False),
    ("linux/arm/v7", "linux/arm", True),
])
def test_same_platform(image, host, same):
    assert same_platform(image, host) is same


def test_platform_text_keeps_a_named_variant_only():
    assert platform_text(parse_platform("linux/arm64/v8")) == "linux/arm64/v8"
    assert platform_text(parse_platform("aarch64")) == "linux/arm64"


def load(fixture_text, name):
    return json.loads(fixture_text("docker", name))[0]


def test_image_facts_of_the_lab_document(fixture_text):
    ref = "10.77.0.5:5000/sparkops/lab-vllm:0.17.0-arm64"
    facts = image_facts(ref, load(fixture_text, "image-inspect-lab-20.10-arm64.json"))
    assert facts["platform"] == "linux/arm64" and facts["variant"] is None
    assert facts["digest"].startswith("10.77.0.5:5000/sparkops/lab-vllm@sha256:")
    assert facts["id"].startswith("sha256:")
    assert facts["graph"]["Name"] == "overlay2"
    assert not same_platform(facts["platform"], host_platform("x86_64"))
    assert same_platform(facts["platform"], host_platform("aarch64"))


def test_image_facts_as_an_arm64_host_prints_them(fixture_text):
    facts = image_facts("vllm/vllm-openai:v0.17.0", load(fixture_text, "image-inspect-arm64-v8-containerd.json"))
    assert facts["platform"] == "linux/arm64/v8"
    assert same_platform(facts["platform"], host_platform("aarch64"))  # the arm64 host runs it
    assert facts["config"]["Entrypoint"] == ["vllm", "serve"]
    assert facts["digest"] == "vllm/vllm-openai@" + facts["id"]


def test_image_facts_picks_the_digest_of_its_own_repository():
    data = {"Id": "sha256:1", "RepoDigests": ["a/x@sha256:aa", "reg:5000/b/y@sha256:bb"], "Architecture": "amd64"}
    assert image_facts("reg:5000/b/y:tag", data)["digest"] == "reg:5000/b/y@sha256:bb"
    assert image_facts("c/z:1", data)["digest"] == "a/x@sha256:aa"  # none of its own: the first
    assert image_facts("c/z:1", {"Id": "sha256:1"})["digest"] is None  # docker load: no digest


def test_ps_rows_of_the_captured_listing(fixture_text):
    rows = parse_ps_json(fixture_text("lab", "docker-ps-stale.jsonl"))
    assert len(rows) == 3
    ours = [r for r in rows if r["name"] == "sparkops-ray-worker"][0]
    assert ours["running"] and len(ours["labels"]["sparkops.spec"]) == 16
    assert [r["running"] for r in rows].count(False) == 1


def test_ps_label_values_may_hold_commas():
    line = json.dumps({"ID": "1", "Names": "a", "Labels": "x=1,2,y=3", "State": "running", "Status": "Up 2s"})
    assert parse_ps_json(line)[0]["labels"] == {"x": "1,2", "y": "3"}


def test_ps_garbage_is_named():
    with pytest.raises(DockerError, match="not JSON"):
        parse_ps_json("Cannot connect to the Docker daemon at unix:///var/run/docker.sock")


@pytest.mark.parametrize("server,minimum,speak", [("1.41", None, "1.41"), ("1.52", "1.44", "1.52"),
                                                  ("1.60", "1.44", _docker.MAX_API), ("", None, "1.41")])
def test_negotiate(server, minimum, speak):
    assert negotiate(server, minimum) == speak


def test_negotiate_refuses_a_daemon_newer_than_we_speak():
    with pytest.raises(DockerError, match="needs API 1.60 or newer"):
        negotiate("1.61", "1.60")


class FakeDaemon(object):
    """A unix-socket HTTP server that answers as a Docker daemon of one API range would:
    /_ping with its Api-Version header (or the captured 20.10 bytes), 400 for a version outside
    [minimum, maximum] with Docker's own words, /images/get streams bytes, /images/load reads
    a chunked body. A stand-in for dockerd in unit tests; the lab runs the real one."""

    def __init__(self, path, maximum, minimum, ping_bytes=None, ping_header=True, refusal_bytes=None):
        self.path, self.maximum, self.minimum = path, maximum, minimum
        self.ping_bytes, self.ping_header, self.refusal_bytes = ping_bytes, ping_header, refusal_bytes
        self.paths, self.loaded, self.headers, self.distribution = [], b"", [], None
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.thread = threading.Thread(target=self.serve)
        self.thread.daemon = True
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, dummy = self.sock.accept()
            except OSError:
                return
            with conn:
                self.answer(conn)

    def answer(self, conn):
        f = conn.makefile("rb")
        method, path, dummy = f.readline().decode().split(" ", 2)
        headers = {}
        for line in iter(f.readline, b"\r\n"):
            key, dummy, value = line.decode().partition(":")
            headers[key.strip().lower()] = value.strip()
        self.paths.append(path)
        self.headers.append(headers)
        if path == "/_ping":
            if self.ping_bytes:
                conn.sendall(self.ping_bytes)
                return
            extra = "Api-Version: %s\r\n" % self.maximum if self.ping_header else ""
            return self.reply(conn, 200, b"OK", extra)
        if path == "/version":
            return self.reply(conn, 200, json.dumps({"ApiVersion": self.maximum,
                                                     "MinAPIVersion": self.minimum}).encode())
        version = path.split("/")[1][1:]
        if _docker.version_tuple(version) < _docker.version_tuple(self.minimum):
            if self.refusal_bytes:
                conn.sendall(self.refusal_bytes)
                return
            return self.reply(conn, 400, json.dumps({"message": "client version %s is too old. Minimum supported "
                                                     "API version is %s, please upgrade your client to a newer "
                                                     "version" % (version, self.minimum)}).encode())
        if _docker.version_tuple(version) > _docker.version_tuple(self.maximum):
            return self.reply(conn, 400, json.dumps({"message": "client version %s is too new. Maximum supported "
                                                     "API version is %s" % (version, self.maximum)}).encode())
        if path.startswith("/v%s/distribution/" % version):
            if self.distribution is None:
                return self.reply(conn, 401, b'{"message":"unauthorized: authentication required"}')
            return self.reply(conn, 200, self.distribution)
        if path.startswith("/v%s/images/get" % version):
            return self.reply(conn, 200, b"x" * (3 << 20))
        if path.startswith("/v%s/images/load" % version):
            body = b""
            while True:  # chunked
                size = int(f.readline().strip(), 16)
                body += f.read(size)
                f.readline()
                if size == 0:
                    break
            self.loaded = body
            return self.reply(conn, 200, b'{"stream":"Loaded image"}')
        return self.reply(conn, 404, b'{"message":"page not found"}')

    @staticmethod
    def reply(conn, code, body, extra=""):
        conn.sendall(("HTTP/1.1 %d X\r\nContent-Length: %d\r\n%s\r\n" % (code, len(body), extra)).encode() + body)

    def close(self):
        self.sock.close()


@pytest.fixture
def daemon(tmp_path):
    made = []

    def start(**kw):
        d = FakeDaemon(str(tmp_path / ("docker%d.sock" % len(made))), **kw)
        made.append(d)
        return d
    yield start
    for d in made:
        d.close()


def test_speaks_41_to_docker_20_10(daemon, fixture_text):
    ping = captured(fixture_text, "ping-20.10.txt")
    d = daemon(maximum="1.41", minimum="1.12", ping_bytes=ping)
    api = EngineApi(d.path)
    resp = api.request("GET", "/images/get?names=x")
    data = b"".join(iter(lambda: resp.read(1 << 20), b""))
    assert len(data) == 3 << 20
    assert d.paths == ["/_ping", "/v1.41/images/get?names=x"]


def test_docker_29_refuses_the_old_fixed_version_and_accepts_the_negotiated_one(daemon):
    d = daemon(maximum="1.52", minimum="1.44")
    old = EngineApi(d.path)
    old._version = "1.41"  # what the hand-written client pinned before
    with pytest.raises(DockerError, match="HTTP 400: .*too old. Minimum supported API version is 1.44"):
        old.request("GET", "/images/get?names=x")
    api = EngineApi(d.path)
    assert api.version == "1.52"

    def chunks():
        for i in range(4):
            yield b"layer%d" % i
    out = api.request("POST", "/images/load?quiet=1", body=chunks(), headers={"Content-Type": "application/x-tar"})
    assert b"Loaded image" in out.read()
    assert d.loaded == b"layer0layer1layer2layer3"


def captured(fixture_text, name):
    """A captured HTTP answer (stored with \n line endings) as the daemon sent it."""
    head, dummy, body = fixture_text("docker", name).partition("\n\n")
    return (head.replace("\n", "\r\n") + "\r\n\r\n" + body).encode()


def test_real_docker_26_answers_min_api_1_44(daemon, fixture_text):
    """The /_ping and the refusal of v1.41 that dockerd 26.1.5 with DOCKER_MIN_API_VERSION=1.44
    (as Docker 29 ships) really sent: the old pinned client fails, the negotiated one works."""
    d = daemon(maximum="1.45", minimum="1.44", ping_bytes=captured(fixture_text, "ping-26.1-min-1.44.txt"),
               refusal_bytes=captured(fixture_text, "refused-1.41-by-26.1-min-1.44.txt"))
    old = EngineApi(d.path)
    old._version = "1.41"
    with pytest.raises(DockerError, match="HTTP 400: .*client version 1.41 is too old"):
        old.request("GET", "/images/get?names=x")
    api = EngineApi(d.path)
    assert api.version == "1.45"
    assert len(api.request("GET", "/images/get?names=x").read()) == 3 << 20


def test_image_facts_of_a_containerd_store_document(fixture_text):
    facts = image_facts("sparkops/tiny:1", load(fixture_text, "image-inspect-26.1-containerd.json"))
    assert facts["graph"] == {"Data": None, "Name": "overlayfs"}  # no overlay2 layer directories
    assert facts["digest"] == "sparkops/tiny@" + facts["id"]  # the id is the manifest's digest
    assert facts["platform"] == "linux/amd64"


def test_a_daemon_without_the_header_is_asked_for_its_version(daemon):
    d = daemon(maximum="1.44", minimum="1.24", ping_header=False)
    api = EngineApi(d.path)
    assert api.version == "1.44"
    assert d.paths == ["/_ping", "/version"]


def test_no_daemon_is_named(tmp_path):
    path = str(tmp_path / "none.sock")
    with pytest.raises(DockerError, match="did not answer GET /_ping"):
        EngineApi(path).request("GET", "/images/get?names=x")


def test_socket_path_from_docker_host():
    assert _docker.socket_path({"DOCKER_HOST": "unix:///run/user/1000/docker.sock"}) == "/run/user/1000/docker.sock"
    assert _docker.socket_path({}) == "/var/run/docker.sock"
    with pytest.raises(DockerError, match="only a unix socket"):
        _docker.socket_path({"DOCKER_HOST": "tcp://10.0.0.1:2375"})


def test_the_same_image_in_both_stores_has_two_ids_and_one_content_id(fixture_text):
    """Both documents CAPTURED: lab-vllm:0.17.0-arm64 pulled from the lab registry by dockerd
    20.10 (classic overlay2 store) and by dockerd 26.1.5 (containerd store)."""
    ref = "10.77.0.5:5000/sparkops/lab-vllm:0.17.0-arm64"
    classic = image_facts(ref, load(fixture_text, "image-inspect-lab-20.10-arm64.json"))
    containerd = image_facts(ref, load(fixture_text, "image-inspect-26.1-containerd-lab-arm64.json"))
    assert classic["id"] != containerd["id"]  # config digest vs manifest digest
    assert containerd["id"] == containerd["digest"].split("@")[1]
    assert classic["content_id"] == containerd["content_id"]
    other = load(fixture_text, "image-inspect-26.1-containerd-lab-arm64.json")
    other["RootFS"]["Layers"] = other["RootFS"]["Layers"][:-1]
    assert image_facts(ref, other)["content_id"] != classic["content_id"]  # other layers: another image
    other = load(fixture_text, "image-inspect-26.1-containerd-lab-arm64.json")
    other["Config"]["Entrypoint"] = ["/bin/sh"]
    assert image_facts(ref, other)["content_id"] != classic["content_id"]  # another way to run it


def test_registry_of_names_the_registry_as_config_json_keys_it():
    from ansible_collections.sparkops.inference.plugins.module_utils._docker import registry_of
    assert registry_of("10.77.0.5:5000/sparkops/lab-vllm:0.17.0") == "10.77.0.5:5000"
    assert registry_of("nvcr.io/nvidia/vllm:25.11-py3") == "nvcr.io"
    assert registry_of("localhost/a:b") == "localhost"
    assert registry_of("vllm/vllm-openai:v0.11.0") == "https://index.docker.io/v1/"
    assert registry_of("ubuntu@sha256:" + "a" * 64) == "https://index.docker.io/v1/"


def test_registry_auth_from_what_docker_login_wrote():
    import base64
    import json
    from ansible_collections.sparkops.inference.plugins.module_utils._docker import registry_auth
    # config.json as `docker login 10.77.0.5:5000` writes it without a credential helper
    config = json.dumps({"auths": {"10.77.0.5:5000": {"auth": base64.b64encode(b"lab:pa:ss").decode()}}})
    header = json.loads(base64.urlsafe_b64decode(registry_auth(config, "10.77.0.5:5000")).decode())
    assert header == {"username": "lab", "password": "pa:ss", "serveraddress": "10.77.0.5:5000"}
    assert registry_auth(config, "nvcr.io") is None
    # Docker Desktop / a credential helper: only the registry's name is in config.json
    helper = json.dumps({"auths": {"nvcr.io": {}}, "credsStore": "desktop"})
    assert registry_auth(helper, "nvcr.io") is None
    assert registry_auth("not json", "nvcr.io") is None and registry_auth("", "nvcr.io") is None


def test_tag_moved_compares_the_repo_digest_with_the_registry():
    from ansible_collections.sparkops.inference.plugins.module_utils._docker import tag_moved
    held = "10.77.0.5:5000/sparkops/lab-vllm@sha256:46e6176b"
    assert tag_moved(held, "sha256:46e6176b") is False
    assert tag_moved(held, "sha256:99999999") is True
    assert tag_moved(None, "sha256:46e6176b") is None  # loaded with docker load: no repo digest
    assert tag_moved(held, None) is None  # the registry could not be asked


class FakeModule(object):
    """What Docker() asks of an AnsibleModule: where the CLI is (the Engine API needs none)."""

    @staticmethod
    def get_bin_path(name, required=False):
        return "/usr/bin/" + name


# /distribution/10.77.0.5:5000/sparkops/lab-vllm:0.17.0/json as the lab's Docker 26.1 answered it
DISTRIBUTION = (b'{"Descriptor":{"mediaType":"application/vnd.docker.distribution.manifest.v2+json",'
                b'"digest":"sha256:46e6176b7c58559499c9ddb7d26ac86b1e190257b610ef697a92a0a1dd7415e6","size":954},'
                b'"Platforms":[{"architecture":"amd64","os":"linux"}]}')


def test_registry_digest_asks_the_daemon_with_the_login_credentials(daemon, tmp_path, monkeypatch):
    import base64
    from ansible_collections.sparkops.inference.plugins.module_utils._docker import Docker
    d = daemon(maximum="1.45", minimum="1.24")
    d.distribution = DISTRIBUTION
    monkeypatch.setenv("DOCKER_HOST", "unix://" + d.path)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps(
        {"auths": {"10.77.0.5:5000": {"auth": base64.b64encode(b"lab:secret").decode()}}}))
    ref = "10.77.0.5:5000/sparkops/lab-vllm:0.17.0"
    assert Docker(FakeModule()).registry_digest(ref) == (
        "sha256:46e6176b7c58559499c9ddb7d26ac86b1e190257b610ef697a92a0a1dd7415e6", None)
    assert d.paths[-1] == "/v1.45/distribution/%s/json" % ref
    sent = json.loads(base64.urlsafe_b64decode(d.headers[-1]["x-registry-auth"]).decode())
    assert sent == {"username": "lab", "password": "secret", "serveraddress": "10.77.0.5:5000"}
    d.distribution = None  # a registry that wants credentials it did not get
    digest, error = Docker(FakeModule()).registry_digest("nvcr.io/nvidia/vllm:25.11-py3")
    assert digest is None and "HTTP 401" in error and "authentication required" in error
    assert "x-registry-auth" not in d.headers[-1]
