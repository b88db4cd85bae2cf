# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way this collection's modules talk to Docker.

- ``Docker(module, cli)``: the CLI (found once, run with the C locale, argv lists only) for
  inspect / ps / logs / rm / create / run, as community.docker's CLI-based modules do.
- ``Docker.api(...)``: the Engine API over the unix socket for the calls that stream an image's
  bytes (export, save, load), chunk by chunk, never held in memory, no subprocess. The API
  version is negotiated with the daemon (``GET /_ping`` answers ``API-Version``), so it works
  from Docker 20.10 (1.41) to Docker 29, which refuses anything below 1.44.
- Pure helpers (no module needed): platform strings normalised as Docker compares them
  (``linux/arm64`` == ``linux/arm64/v8``; a missing variant matches), ``docker image inspect``
  and ``docker ps`` documents reduced to what the collection uses.

Why not a client library: the ``docker`` SDK would be one more Python package on every target
host (DGX OS ships ``python3-requests`` for community.docker, not ``python3-docker``), and
community.docker's module utils are private since its 4.x line (they may change in a bugfix
release). The CLI plus a small stdlib HTTP client over the socket needs neither.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import os
import re
import socket
import subprocess

from ansible.module_utils.six.moves import http_client

C_LOCALE = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}
DEFAULT_SOCKET = "/var/run/docker.sock"
# What this client speaks when the daemon does not say (Docker 20.10); the daemon's own version
# is used when it is lower than MAX_API (a client never asks for more than the daemon has).
FALLBACK_API = "1.41"
MAX_API = "1.52"

# `uname -m` and Go's GOARCH spellings -> the architecture in an image's platform
ARCHITECTURES = {
    "x86_64": "amd64", "amd64": "amd64", "x64": "amd64",
    "aarch64": "arm64", "arm64": "arm64", "armv8": "arm64", "armv8l": "arm64",
    "armv7l": "arm", "armhf": "arm", "arm": "arm",
    "i386": "386", "i686": "386", "386": "386",
    "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64",
}


class DockerError(Exception):
    pass


# ---------------------------------------------------------------------------- pure helpers

def architecture(machine):
    """`uname -m` (or an image's Architecture) -> Docker's spelling (aarch64 -> arm64)."""
    text = (machine or "").strip().lower()
    return ARCHITECTURES.get(text, text)


def platform(os_name=None, arch=None, variant=None):
    """{os, architecture, variant} normalised; an empty variant stays None (it matches any)."""
    arch = architecture(arch)
    variant = (variant or "").strip().lower() or None
    if arch == "arm64" and variant == "8":
        variant = "v8"
    return {"os": (os_name or "linux").strip().lower(), "architecture": arch or None, "variant": variant}


def parse_platform(text):
    """'linux/arm64/v8', 'arm64', 'linux/aarch64' -> platform()."""
    parts = [p for p in (text or "").strip().split("/") if p]
    if len(parts) == 1:
        return platform("linux", parts[0])
    return platform(parts[0] if parts else None, parts[1] if len(parts) > 1 else None,
                    parts[2] if len(parts) > 2 else None)


def platform_text(plat):
    """platform() -> 'linux/arm64' or 'linux/arm64/v8' (the variant only when known)."""
    if isinstance(plat, str):
        plat = parse_platform(plat)
    text = "%s/%s" % (plat.get("os") or "linux", plat.get("architecture") or "?")
    return text + ("/" + plat["variant"] if plat.get("variant") else "")


def host_platform(machine):
    """The platform a host with this `uname -m` runs natively: 'linux/arm64'."""
    return "linux/" + architecture(machine)


def same_platform(a, b):
    """Whether an image of platform a runs natively on b, as Docker decides it: same os and
    architecture; variants equal after normalisation, or either one not named."""
    a = parse_platform(a) if isinstance(a, str) else a
    b = parse_platform(b) if isinstance(b, str) else b
    if a["os"] != b["os"] or a["architecture"] != b["architecture"]:
        return False
    va, vb = a.get("variant"), b.get("variant")
    return va is None or vb is None or va == vb


def image_repository(ref):
    """'reg:5000/a/b:tag' or 'a/b@sha256:..' -> 'reg:5000/a/b'."""
    repo = ref.split("@")[0]
    last = repo.rsplit("/", 1)[-1]
    if ":" in last:
        repo = repo[:len(repo) - len(last)] + last.split(":")[0]
    return repo


def registry_of(ref):
    """The registry a reference is pulled from, as Docker's config.json keys it:
    'reg:5000/a/b:t' -> 'reg:5000'; 'nvcr.io/nvidia/vllm:x' -> 'nvcr.io'; 'vllm/vllm-openai:x'
    and 'ubuntu' -> Docker Hub's 'https://index.docker.io/v1/'."""
    first = ref.split("@")[0].split("/", 1)
    if len(first) == 2 and ("." in first[0] or ":" in first[0] or first[0] == "localhost"):
        return first[0]
    return "https://index.docker.io/v1/"


def registry_auth(config_text, registry):
    """The Engine API's X-Registry-Auth value for registry from the text of a Docker client's
    config.json (what `docker login` wrote there), or None: no entry, or the credentials live
    in a credential helper (credsStore / credHelpers) - then the daemon asks anonymously."""
    try:
        config = json.loads(config_text or "{}")
    except ValueError:
        return None
    entry = (config.get("auths") or {}).get(registry) or {}
    if not entry.get("auth"):
        return None
    try:
        user, dummy, password = base64.b64decode(entry["auth"]).decode("utf-8").partition(":")
    except (ValueError, TypeError, UnicodeDecodeError):
        return None
    body = json.dumps({"username": user, "password": password, "serveraddress": registry})
    return base64.urlsafe_b64encode(body.encode("utf-8")).decode("ascii")


def tag_moved(repo_digest, registry_digest):
    """Whether the registry's tag now points elsewhere than the copy a host holds: True/False,
    None when either is unknown (an image loaded with docker load has no repo digest)."""
    if not repo_digest or not registry_digest:
        return None
    return repo_digest.split("@")[-1] != registry_digest


# what of an image's config decides how it runs (not its creation time, not store details)
CONTENT_CONFIG_KEYS = ("Entrypoint", "Cmd", "Env", "WorkingDir", "User", "Labels", "ExposedPorts", "Volumes")


def content_id(data):
    """One `docker image inspect` document -> an id of the image's content that is the same in
    every image store: the platform, the layers' diff ids and the run config. (`Id` is the config
    digest in the classic store but the manifest digest in the containerd store, so the same
    image has two ids on a mixed cluster; an image loaded with `docker load` has no repo digest.)"""
    config = data.get("Config") or {}
    plat = platform(data.get("Os"), data.get("Architecture"), data.get("Variant"))
    body = {"platform": platform_text(plat), "layers": (data.get("RootFS") or {}).get("Layers") or [],
            "config": dict((k, config.get(k)) for k in CONTENT_CONFIG_KEYS if config.get(k))}
    return "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def image_facts(ref, data):
    """One `docker image inspect` document -> what the collection uses of it.

    digest: the repo digest of ref's own repository (else the first); None for an image that
    was loaded (docker load) rather than pulled.
    """
    digests = data.get("RepoDigests") or []
    repo = image_repository(ref)
    digest = next((d for d in digests if d.split("@")[0] == repo), digests[0] if digests else None)
    plat = platform(data.get("Os"), data.get("Architecture"), data.get("Variant"))
    return {"image": ref, "id": data.get("Id"), "content_id": content_id(data), "digest": digest,
            "repo_digests": digests,
            "platform": platform_text(plat), "os": plat["os"], "architecture": plat["architecture"],
            "variant": plat["variant"], "config": data.get("Config") or {},
            "graph": data.get("GraphDriver") or {}}


def parse_ps_json(text):
    """`docker ps --format '{{json .}}'` (one object a line) -> [{id, name, image, command,
    state, running, status, labels}]."""
    rows = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise DockerError("docker ps printed a line that is not JSON: %r" % line[:200])
        labels, key = {}, None
        for item in (row.get("Labels") or "").split(","):
            name, sep, value = item.partition("=")
            if sep:
                key = name
                labels[key] = value
            elif key is not None:  # a value that holds a comma
                labels[key] += "," + item
        status = row.get("Status") or ""
        state = (row.get("State") or ("running" if status.startswith("Up") else "exited")).lower()
        rows.append({"id": row.get("ID"), "name": (row.get("Names") or "").split(",")[0],
                     "image": row.get("Image"), "command": (row.get("Command") or "").strip('"'),
                     "state": state, "running": state == "running", "status": status, "labels": labels})
    return rows


def version_tuple(text):
    """'2.60.0' -> (2, 60, 0); '2.52.0rc1' -> (2, 52, 0); '1.44' -> (1, 44)."""
    parts = []
    for piece in str(text or "").strip().split("."):
        m = re.match(r"^(\d+)", piece)
        if not m:
            break
        parts.append(int(m.group(1)))
    return tuple(parts)


def negotiate(server_version, server_min=None):
    """The API version to speak: the daemon's, capped at MAX_API; FALLBACK_API when the daemon
    says nothing. Raises DockerError when even MAX_API is below the daemon's minimum."""
    if not server_version or not version_tuple(server_version):
        return FALLBACK_API
    if server_min and version_tuple(server_min) > version_tuple(MAX_API):
        raise DockerError("the Docker engine needs API %s or newer; this collection speaks up to %s: "
                          "upgrade sparkops.inference" % (server_min, MAX_API))
    return min(server_version, MAX_API, key=version_tuple)


def socket_path(environ=None):
    host = (environ if environ is not None else os.environ).get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        return host[len("unix://"):]
    if host:
        raise DockerError("DOCKER_HOST is %s: only a unix socket is supported for streaming images" % host)
    return DEFAULT_SOCKET


# ---------------------------------------------------------------------------- the Engine API

class _UnixConnection(http_client.HTTPConnection):
    def __init__(self, path, timeout):
        http_client.HTTPConnection.__init__(self, "localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


class EngineApi(object):
    """The Engine API over a unix socket, its version negotiated on first use."""

    def __init__(self, path=None):
        self.path = path or socket_path()
        self._version = None

    def _send(self, method, path, body=None, timeout=3600, headers=None):
        conn = _UnixConnection(self.path, timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {},
                         encode_chunked=body is not None and not isinstance(body, (bytes, str)))
            return conn.getresponse()
        except (socket.error, IOError) as exc:
            raise DockerError("the Docker engine at %s did not answer %s %s: %s"
                              % (self.path, method, path, exc))

    @property
    def version(self):
        if self._version is None:
            resp = self._send("GET", "/_ping", timeout=30)
            resp.read()
            server = resp.getheader("API-Version")
            if not server:  # a daemon older than the header: ask /version (unversioned)
                resp = self._send("GET", "/version", timeout=30)
                try:
                    data = json.loads(resp.read().decode("utf-8", "replace"))
                except ValueError:
                    data = {}
                server = data.get("ApiVersion")
                self._version = negotiate(server, data.get("MinAPIVersion"))
            else:
                self._version = negotiate(server)
        return self._version

    def request(self, method, path, body=None, timeout=3600, headers=None):
        """An open response (read it in chunks); DockerError on an HTTP error."""
        resp = self._send(method, "/v%s%s" % (self.version, path), body, timeout, headers)
        if resp.status >= 300:
            raise DockerError("Docker answered %s %s with HTTP %d: %s"
                              % (method, path, resp.status, resp.read(2000).decode("utf-8", "replace")))
        return resp


# ---------------------------------------------------------------------------- the CLI

class Docker(object):
    """The docker CLI on this host, for a module (duck-typed: get_bin_path, run_command,
    fail_json). required=False: ``bin`` is None when it is missing (say so yourself)."""

    def __init__(self, module, cli="docker", required=True):
        self.module = module
        self.cli = cli
        self.bin = module.get_bin_path(cli)
        self._api = None
        if not self.bin and required:
            module.fail_json(msg="the Docker CLI %r is not on this host's PATH (%s): install Docker "
                                 "(DGX OS has it) or set docker_cli" % (cli, os.environ.get("PATH", "")))

    def run(self, args, check=False, what=None):
        """rc, out, err of `docker ARGS` with the C locale; check: fail the module on rc != 0."""
        rc, out, err = self.module.run_command([self.bin] + list(args), environ_update=C_LOCALE)
        if check and rc != 0:
            self.module.fail_json(msg="%s failed (docker %s, exit %d): %s" % (
                what or "a docker command", " ".join(args[:2]), rc, (err or out).strip()[-500:]))
        return rc, out, err

    def timeout_argv(self, seconds, kill_after=10):
        """argv prefix that bounds a docker command with coreutils timeout."""
        return [self.module.get_bin_path("timeout", required=True), "-k", str(kill_after), str(seconds),
                self.bin]

    def run_bounded(self, seconds, args, kill_after=10):
        """rc (124/137 when it ran over), out, err of `timeout N docker ARGS`."""
        return self.module.run_command(self.timeout_argv(seconds, kill_after) + list(args),
                                       environ_update=C_LOCALE)

    def stream_bounded(self, seconds, args, on_line, kill_after=10):
        """Like run_bounded(), calling on_line(line) for each line of stdout as it comes (a pull's
        progress); stderr is collected. Returns rc, out, err."""
        argv = self.timeout_argv(seconds, kill_after) + list(args)
        env = dict(os.environ, **C_LOCALE)
        # run_command() hands over the output only at the end; a pull's progress needs each line
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,  # pylint: disable=ansible-bad-function
                                universal_newlines=True, bufsize=1)
        lines = []
        for line in iter(proc.stdout.readline, ""):
            lines.append(line)
            on_line(line)
        err = proc.stderr.read()
        proc.wait()
        return proc.returncode, "".join(lines), err

    # images
    def image_inspect(self, ref):
        """(document, None) or (None, the CLI's error text)."""
        rc, out, err = self.run(["image", "inspect", ref])
        if rc != 0:
            return None, (err or out).strip()
        try:
            return json.loads(out)[0], None
        except (ValueError, IndexError):
            return None, "docker image inspect printed no document: %s" % out[:200]

    def image(self, ref):
        """image_facts() of ref on this host, or None when it is not here."""
        data, dummy = self.image_inspect(ref)
        return image_facts(ref, data) if data else None

    def image_id(self, ref):
        rc, out, dummy = self.run(["image", "inspect", "--format", "{{.Id}}", ref])
        return out.strip() if rc == 0 and out.strip() else None

    def content_id(self, ref):
        """content_id() of ref on this host, or None when it is not here."""
        data, dummy = self.image_inspect(ref)
        return content_id(data) if data else None

    # containers
    def container(self, name):
        """The `docker container inspect` document of name, or None when there is none."""
        rc, out, dummy = self.run(["container", "inspect", name])
        if rc != 0:
            return None
        try:
            return json.loads(out)[0]
        except (ValueError, IndexError):
            return None

    def ps(self, all=True, filters=None):
        """parse_ps_json() of `docker ps`; fails the module when the daemon does not answer."""
        args = ["ps", "--no-trunc", "--format", "{{json .}}"] + (["-a"] if all else [])
        for f in filters or []:
            args += ["--filter", f]
        rc, out, err = self.run(args)
        if rc != 0:
            self.module.fail_json(msg="cannot list the containers on this host (docker ps, exit %d): %s"
                                      % (rc, (err or out).strip()[-500:]))
        try:
            return parse_ps_json(out)
        except DockerError as exc:
            self.module.fail_json(msg=str(exc))

    def logs(self, name, tail):
        """The container's last `tail` non-empty log lines (stdout and stderr)."""
        dummy, out, err = self.run(["logs", "--tail", str(tail), name])
        return [line for line in (out + err).splitlines() if line.strip()][-tail:]

    def rm(self, name):
        """Remove a container whatever its state (absent is fine)."""
        return self.run(["rm", "-f", name])[0] == 0

    def registry_digest(self, ref, timeout=15):
        """(digest, None) - the digest the registry gives ref's tag now, asked through the
        daemon (its mirrors, insecure registries and proxies apply; the credentials `docker
        login` left in this user's config.json are passed) - or (None, why not)."""
        config = os.path.join(os.environ.get("DOCKER_CONFIG") or os.path.expanduser("~/.docker"), "config.json")
        try:
            with open(config) as f:
                auth = registry_auth(f.read(), registry_of(ref))
        except (IOError, OSError):
            auth = None
        try:
            resp = self.api.request(
                "GET", "/distribution/%s/json" % ref, timeout=timeout,
                headers={"X-Registry-Auth": auth} if auth else None)
            data = json.loads(resp.read().decode("utf-8", "replace"))
        except DockerError as exc:
            return None, str(exc)
        except (ValueError, socket.error, IOError) as exc:
            return None, "the registry's answer for %s could not be read: %s" % (ref, exc)
        digest = (data.get("Descriptor") or {}).get("digest")
        return (digest, None) if digest else (None, "the registry gave no digest for %s" % ref)

    # the Engine API
    @property
    def api(self):
        if self._api is None:
            self._api = EngineApi()
        return self._api
