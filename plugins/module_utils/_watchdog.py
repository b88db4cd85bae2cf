# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watchdog: its decisions (pure) and the agent that runs them on every host.

One agent per host, in a container of its own (``sparkops-watchdog``, restart policy as our
other containers, so it comes back after a reboot without a unit file), started by
roles/watchdog with ``python3 -u _watchdog.py CONFIG``: this very file, copied to the host
(standard library only; nothing of Ansible is imported, the image's python3 runs it).

- The **head's** agent asks the engine for a real short completion every ``interval`` seconds.
  After ``failures`` failed answers in a row it restarts the cluster as one gang, in the order
  Ray needs, and publishes each phase of that restart (a generation number and a phase) over
  HTTP on the head's fabric address: ``stop`` (every engine container stopped), ``ray`` (the
  head's Ray container restarted, then every worker's), ``engine`` (the engines started
  again), ``done``. It waits for every worker's agent to confirm a phase (``phase_timeout``)
  before it publishes the next. At most ``max_restarts`` gang restarts per ``window`` seconds;
  past that budget it stops trying and records that it gave up (until the engine answers
  again). A pause file, the ``paused`` setting, or the cluster's deploy lock (a deploy or a
  teardown at work) pauses it.
- A **worker's** agent asks the head's agent for the generation every ``poll`` seconds and
  runs on its own host the phases it has not run yet (stop its engine container if it has one,
  restart its Ray container, start its engine). The head's answers are signed with the
  cluster's Ray token (HMAC-SHA256), so nothing else on the network can restart a worker.
- A launch **without Ray** (one engine rank per host) has no Ray container (``ray_container``
  empty): its gang is every host's rank stopped, then started again - the ``ray`` phase
  restarts nothing, and is still published and confirmed, so the ranks start only once every
  one of them has stopped.
- Each agent keeps its state in ``state_file`` (``/var/lib/sparkops/watchdog.json``), which
  ``status.yml`` and the report read (``describe``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import hashlib
import hmac
import http.client as http_client
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

try:  # as a module_util (the filters, the tests)
    from ansible_collections.sparkops.inference.plugins.module_utils import _serving
except ImportError:  # the agent on a host: roles/watchdog mounts _serving.py beside this file
    import _serving  # pylint: disable=import-error

PHASES = ("stop", "ray", "engine", "done")
# published instead of the next phase when a deploy or teardown takes the cluster's lock in the middle
# of a gang restart: that run now owns the containers; every agent leaves the rest of the gang to it
ABANDONED = "abandoned"
DEFAULTS = {
    "interval": 30, "timeout": 20, "failures": 3, "max_restarts": 2, "window": 3600,
    "grace": 900, "phase_timeout": 600, "stop_timeout": 30, "poll": 2, "paused": False,
}
POSITIVE = ("interval", "timeout", "failures", "window", "grace", "phase_timeout", "poll")
# the engines' generation-token counters (as module_utils/_metrics names them; a unit test keeps
# the two the same): tokens that still flow mean a completion that did not come back is queued
# behind other requests, not hung
TOKEN_COUNTERS = ("vllm:generation_tokens_total", "sglang:generation_tokens_total")


class ConfigError(ValueError):
    pass


# ---------------------------------------------------------------------------- pure decisions

def settings(o):
    """The settings a person chooses (DEFAULTS' keys; the role's variables are watchdog_KEY), over
    DEFAULTS, checked: the deploy checks them in preflight (filter watchdog_settings_error), before it
    changes anything, and each agent again at its start. Raises ConfigError naming the variable,
    what it expected and what it found."""
    cfg = dict(DEFAULTS)
    cfg.update(dict((k, v) for k, v in (o or {}).items() if k in DEFAULTS and v is not None and v != ""))
    for key in POSITIVE + ("max_restarts", "stop_timeout"):
        try:
            cfg[key] = int(cfg[key])
        except (TypeError, ValueError):
            raise ConfigError("watchdog_%s is %r: expected a whole number" % (key, cfg[key]))
        if key in POSITIVE and cfg[key] < 1 or cfg[key] < 0:
            raise ConfigError("watchdog_%s is %r: expected %s" % (key, cfg[key], "1 or more" if key in POSITIVE else "0 or more"))
    if cfg["timeout"] > cfg["interval"]:
        raise ConfigError("watchdog_timeout is %d s, longer than the interval (%d s): a probe would still run when "
                          "the next is due; set watchdog_timeout below watchdog_interval" % (cfg["timeout"], cfg["interval"]))
    cfg["paused"] = cfg["paused"] in (True, "true", "True", "yes", 1, "1")
    return cfg


def config(o):
    """The agent's settings: settings() and what the role fills in (role, host, containers, URLs,
    files), checked. Raises ConfigError naming the key, what it expected and what it found."""
    o = o or {}
    cfg = dict((k, v) for k, v in o.items() if k not in DEFAULTS)
    cfg.update(settings(o))
    if cfg.get("role") not in ("head", "worker"):
        raise ConfigError("role is %r: expected head or worker" % (cfg.get("role"),))
    # ray_container may be empty: a launch without Ray (one engine rank per host)
    need = ("host", "engine_container", "state_file")
    if cfg["role"] == "head":
        need += ("probe_url", "model", "listen", "port", "workers", "pause_file", "lock_file")
    else:
        need += ("head_url",)
    missing = [k for k in need if cfg.get(k) is None or cfg.get(k) == ""]
    if missing:
        raise ConfigError("the %s's agent needs %s" % (cfg["role"], ", ".join(missing)))
    return cfg


def generated_tokens(text):
    """The sum of the engine's generation-token counters in a Prometheus exposition, None when it
    has none (SGLang without --enable-metrics, or not an engine's /metrics)."""
    total, seen = 0.0, False
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(None, 1)[0]
        if name not in TOKEN_COUNTERS:
            continue
        value = (line.rsplit("}", 1)[1] if "}" in line else line.split(None, 1)[1]).split()
        try:
            total += float(value[0])
            seen = True
        except (IndexError, ValueError):
            continue
    return total if seen else None


def new_state(role):
    return {"role": role, "state": "starting", "failures": 0, "restarts": [], "generation": 0,
            "phase": "done", "last_ok": None, "last_check": None, "last_error": None,
            "gave_up_at": None, "grace_until": None, "paused_by": None, "gangs": []}


def recent(restarts, now, window):
    return [t for t in restarts if now - t < window]


def started_at(text):
    """Docker's State.StartedAt (RFC 3339, nanoseconds, UTC) -> seconds since the epoch, or None."""
    try:
        return float(calendar.timegm(time.strptime(str(text)[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


def decide(state, ok, error, now, cfg, paused_by=None, idle=None, busy=None, started=None):
    """One probe's verdict -> (the new state, 'restart' or None). Pure: state is not changed.

    ok/error: the probe's result; paused_by: why the agent must not act (pause file, setting,
    lock) or None; idle: why there is nothing to watch (the engine container absent or stopped
    by hand) or None; busy: the tokens the engine generated since the last failed probe (the
    completion queued behind other requests: not a failure) or None; started: when the engine
    container last started (a reboot, Docker's restart of a crash, a deploy, a gang restart): for
    `grace` seconds after it the engine loads its weights, and a failed answer does not count."""
    st = dict(state, last_check=now, paused_by=paused_by)
    if paused_by:
        st.update(state="paused", failures=0, last_error=error)
        if ok:
            st["last_ok"] = now
        return st, None
    if idle:
        st.update(state="idle", failures=0, last_error=idle)
        return st, None
    if ok:  # error: a note on an answer that is not a completion (HTTP 4xx), else None
        st.update(state="watching", failures=0, last_ok=now, last_error=error, gave_up_at=None, grace_until=None)
        return st, None
    st["last_error"] = error
    if st.get("state") == "gave-up":  # until the engine answers again: no restart loop
        return st, None
    if busy:
        st.update(state="busy", failures=0, last_error="%s; yet the engine generated %d token(s) since the last "
                  "look: queued behind other requests, not hung" % (error, busy))
        return st, None
    if (st.get("grace_until") and now < st["grace_until"]) or (started is not None and now - started < cfg["grace"]):
        st["state"] = "starting"  # a (re)started engine loads its weights: not a failure yet
        st["started"] = started
        return st, None
    st["failures"] = int(st.get("failures") or 0) + 1
    if st["failures"] < cfg["failures"]:
        st["state"] = "failing"
        return st, None
    if len(recent(st.get("restarts") or [], now, cfg["window"])) >= cfg["max_restarts"]:
        st.update(state="gave-up", gave_up_at=st.get("gave_up_at") or now)
        return st, None
    return st, "restart"


def gang_started(state, now, cfg, counted=True):
    """The state as a gang restart begins: a new generation, its first phase, counted in the window
    (a restart resumed after the agent itself was restarted is not counted twice)."""
    st = dict(state, generation=int(state.get("generation") or 0) + 1, phase=PHASES[0], state="restarting",
              failures=0)
    if counted:  # only the window's: the list stays as short as the budget over months of service
        st["restarts"] = recent(state.get("restarts") or [], now, cfg["window"]) + [now]
    return st


def gang_done(state, now, cfg, missing):
    """The state after the gang restart: the engine gets `grace` seconds to load before a failed
    answer counts; `missing` lists the workers that did not confirm a phase in time."""
    gangs = list(state.get("gangs") or [])[-9:] + [{"generation": state["generation"], "at": now, "missing": missing}]
    return dict(state, phase="done", state="starting", grace_until=now + cfg["grace"], gangs=gangs)


def gang_abandoned(state, now, phase, holder):
    """The state after a gang restart left at `phase` (not run) because `holder` took the cluster's
    lock: a deploy or teardown recreates or removes what the gang would have restarted."""
    entry = {"generation": state["generation"], "at": now, "missing": [], "abandoned": "before %s: %s" % (phase, holder)}
    gangs = list(state.get("gangs") or [])[-9:] + [entry]
    return dict(state, phase=ABANDONED, state="paused", paused_by=holder, gangs=gangs,
                last_error="gang restart %s abandoned before its phase %s: %s" % (state["generation"], phase, holder))


def phase_index(phase):
    return PHASES.index(phase) if phase in PHASES else len(PHASES) - 1


def pending(done, published):
    """The phases a worker still has to run: done and published are (generation, phase).

    A newer generation: every phase up to the published one (a worker that came late still stops,
    restarts its Ray node and starts its engine, in that order); the same generation: the phases
    after the last one it ran; an older or equal one: nothing."""
    dgen, dphase = done
    pgen, pphase = published
    if pphase == ABANDONED:  # the deploy that took the lock owns the containers now
        return []
    if pgen > dgen:
        return list(PHASES[:phase_index(pphase) + 1])
    if pgen == dgen:
        return list(PHASES[phase_index(dphase) + 1:phase_index(pphase) + 1])
    return []


def sign(key, doc):
    """doc with a 'mac': HMAC-SHA256 over its JSON (keys sorted) under key (bytes); '' without a key."""
    body = dict((k, v) for k, v in doc.items() if k != "mac")
    text = json.dumps(body, sort_keys=True).encode("utf-8")
    body["mac"] = hmac.new(key, text, hashlib.sha256).hexdigest() if key else ""
    return body


def verified(key, doc):
    """Whether doc's mac is the one key gives (always true without a key: Ray auth off)."""
    if not key:
        return True
    return hmac.compare_digest(str(doc.get("mac") or ""), sign(key, doc)["mac"])


def _ago(now, then):
    return "%d s ago" % max(0, round(now - then)) if then else "never"


SHOWN = ("interval", "failures", "max_restarts", "window", "grace")


def describe(state, now):
    """One line for status.yml and the report: what the agent does and why (its settings are in
    the state file too, under 'config')."""
    cfg = (state or {}).get("config") or {}
    if not state:
        return "no state yet (the agent has not run)"
    if state.get("role") == "worker":
        gen, phase = state.get("generation") or 0, state.get("phase") or "done"
        done = ("no gang restart yet" if not gen else "gang restart %d run here to its end" % gen if phase == "done"
                else "gang restart %d abandoned (a deploy or teardown took the lock)" % gen if phase == ABANDONED
                else "gang restart %d run here up to its phase %s" % (gen, phase))
        return "follows the head's agent: %s; the head answered %s%s" % (
            done, _ago(now, state.get("last_contact")), "; " + state["last_error"] if state.get("last_error") else "")
    window = int(cfg.get("window") or DEFAULTS["window"])
    budget = "%d gang restart(s) in the last %d s (at most %s)" % (
        len(recent(state.get("restarts") or [], now, window)), window, cfg.get("max_restarts", DEFAULTS["max_restarts"]))
    what = state.get("state")
    if what == "gave-up":
        return ("GAVE UP %s: the engine still does not answer (%s) after %s; it restarts nothing until the "
                "engine answers again - look at the engine's log, then re-deploy" % (
                    _ago(now, state.get("gave_up_at")), state.get("last_error"), budget))
    if what == "paused":
        return "paused (%s): it restarts nothing; %s" % (state.get("paused_by"), budget)
    if what == "idle":
        return "idle: %s; %s" % (state.get("last_error"), budget)
    if what == "restarting":
        return "restarting the cluster as one gang: generation %s, phase %s" % (state.get("generation"), state.get("phase"))
    if what == "busy":
        return "busy: %s; %s" % (state.get("last_error"), budget)
    if what == "failing":
        return "FAILING: %s failed answer(s) in a row (restarts at %s): %s; %s" % (
            state.get("failures"), cfg.get("failures", DEFAULTS["failures"]), state.get("last_error"), budget)
    if what == "starting":
        since = state.get("started") or (state["gangs"][-1]["at"] if state.get("gangs") else None)
        return "starting: the engine has not answered since it started %s (it loads its weights; failures count " \
            "after %s s); %s" % (_ago(now, since), cfg.get("grace", DEFAULTS["grace"]), budget)
    return "watching: the engine answered %s%s; %s" % (
        _ago(now, state.get("last_ok")), " (%s)" % state["last_error"] if state.get("last_error") else "", budget)


# ---------------------------------------------------------------------------- the agent (I/O)

def _write_json(path, doc):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    os.rename(tmp, path)


def _read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (IOError, OSError, ValueError):
        return None


def _log(msg):
    sys.stdout.write("%s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), msg))
    sys.stdout.flush()


class _UnixConnection(http_client.HTTPConnection):
    """HTTP over the Docker daemon's unix socket."""

    def __init__(self, path, timeout):
        http_client.HTTPConnection.__init__(self, "localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


class Docker(object):
    """The Engine API over the unix socket, at the version the daemon says it speaks (``GET /_ping``
    answers ``API-Version``): requests without a version are deprecated by Docker, and Docker 29
    refuses versions below 1.44, so neither a missing nor a fixed old version would last."""

    def __init__(self, path="/var/run/docker.sock", timeout=120):
        self.path, self.timeout = path, timeout
        self.version = None

    def _send(self, method, url):
        conn = _UnixConnection(self.path, self.timeout)
        try:
            conn.request(method, url)
            res = conn.getresponse()
            body = res.read()
            return res.status, res.getheader("API-Version"), body
        finally:
            conn.close()

    def call(self, method, url):
        try:
            if self.version is None:
                self.version = self._send("GET", "/_ping")[1] or "1.41"  # no header: a daemon older than 1.25
            code, dummy, body = self._send(method, "/v%s%s" % (self.version, url))
        except Exception:
            self.version = None  # a daemon restarted (or upgraded) meanwhile: ask again next time
            raise
        return code, body

    def state(self, name):
        """The container's State ({'Status': 'running', 'StartedAt': ...}), or None when there is none."""
        code, body = self.call("GET", "/containers/%s/json" % name)
        if code == 404:
            return None
        return json.loads(body.decode("utf-8"))["State"]

    def act(self, verb, name, wait=30):
        query = "?t=%d" % wait if verb in ("stop", "restart") else ""
        code, body = self.call("POST", "/containers/%s/%s%s" % (name, verb, query))
        if code == 404:
            return "absent"
        if code not in (204, 304):
            raise RuntimeError("docker %s %s: HTTP %d %s" % (verb, name, code, body[:200]))
        return "done"


def _open(req, timeout):
    """Open a URL without proxies: every URL here is a cluster host's own (an image or a daemon that
    sets http_proxy must not send the probe or the gang elsewhere)."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=timeout)


def probe(cfg, api_key):
    """A real short completion: (True, None) when it comes back; (True, note) when the engine answers
    with a client error (4xx: alive - the probe's key or model name is wrong, which restarting
    would not mend); (False, why) when it does not answer, or answers 5xx (vLLM's dead engine)."""
    body = json.dumps({"model": cfg["model"], "prompt": "ping", "max_tokens": 1}).encode("utf-8")
    req = urllib.request.Request(cfg["probe_url"], data=body, headers={"Content-Type": "application/json"})
    if api_key:
        req.add_header("Authorization", "Bearer " + api_key)
    try:
        resp = _open(req, cfg["timeout"])
        code, text, reason = resp.status, resp.read().decode("utf-8", "replace"), None
    except urllib.error.HTTPError as exc:
        code, text, reason = exc.code, "", exc.reason
    except Exception as exc:  # pylint: disable=broad-except
        return False, "no completion in %d s from %s: %s" % (cfg["timeout"], cfg["probe_url"], exc)
    state = _serving.judge(cfg["model"], completion=(code, text))[0]
    if state == _serving.SERVES:
        return True, None
    if state == _serving.ALIVE:
        return True, "the engine answers, but HTTP %d to the watchdog's completion (%s): check the engine's API " \
            "key file and served name" % (code, reason)
    if reason is not None:
        return False, "HTTP %d from %s: %s" % (code, cfg["probe_url"], reason)
    return False, "an answer without choices from %s" % cfg["probe_url"]


def engine_tokens(cfg):
    """The engine's generation tokens so far, from its /metrics (None when it does not say)."""
    url = cfg["probe_url"].split("/v1/", 1)[0] + "/metrics"
    try:
        return generated_tokens(_open(url, cfg["timeout"]).read().decode("utf-8"))
    except Exception:  # pylint: disable=broad-except
        return None


def _key(cfg):
    try:
        with open(cfg.get("token_file") or "/nonexistent", "rb") as f:
            return f.read().strip()
    except (IOError, OSError):
        return b""


class Head(object):
    def __init__(self, cfg, docker):
        self.cfg, self.docker = cfg, docker
        self.state = _read_json(cfg["state_file"]) or new_state("head")
        self.state["role"] = "head"
        self.workers = dict((w, (0, "done")) for w in cfg["workers"])
        self.lock = threading.Lock()
        self.tokens = None  # the generation-token counters at the last failed probe

    def save(self):
        _write_json(self.cfg["state_file"], dict(self.state, config=dict((k, self.cfg[k]) for k in SHOWN), workers=dict(
            (w, {"generation": g, "phase": p}) for w, (g, p) in self.workers.items())))

    def published(self):
        return {"generation": self.state["generation"], "phase": self.state["phase"]}

    def seen(self, host, generation, phase):
        with self.lock:
            if host in self.workers:
                self.workers[host] = (generation, phase)

    def paused_by(self):
        if self.cfg["paused"]:
            return "watchdog_paused is true"
        if os.path.exists(self.cfg["pause_file"]):
            return "pause file %s" % self.cfg["pause_file"]
        return self.lock_holder()

    def lock_holder(self):
        """Who holds the cluster's lock (a deploy or teardown at work), in words, or None."""
        lock = _read_json(self.cfg["lock_file"])
        if lock is None:
            return None
        since = lock.get("since")
        return "a deploy or teardown holds the cluster's lock (%s, %s@%s, since %s)" % (
            lock.get("playbook"), lock.get("user"), lock.get("controller"),
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since)) if isinstance(since, (int, float)) else since)

    def idle(self):
        """(why there is nothing to watch or None, when the engine container started or None)."""
        state = self.docker.state(self.cfg["engine_container"])
        if state is None:
            return "nothing to watch: no container %s" % self.cfg["engine_container"], None
        if state.get("Status") not in ("running", "restarting"):
            return "%s is %s (stopped by hand or by a deploy: left alone)" % (
                self.cfg["engine_container"], state.get("Status")), None
        return None, started_at(state.get("StartedAt"))

    def wait_workers(self, phase):
        t0 = time.time()
        want = (self.state["generation"], phase_index(phase))
        while True:
            with self.lock:
                missing = sorted(w for w, (g, p) in self.workers.items() if (g, phase_index(p)) < want)
            if not missing or time.time() - t0 > self.cfg["phase_timeout"]:
                return missing
            time.sleep(0.5)

    def publish(self, phase):
        self.state["phase"] = phase
        self.save()
        _log("gang restart, generation %d: %s" % (self.state["generation"], phase))

    def gang(self, counted=True):
        """Stop, ray, engine: before each phase the cluster's lock is read - a deploy or teardown
        that took it in the middle owns the containers now, and the gang is left to it."""
        cfg, docker = self.cfg, self.docker
        self.state = gang_started(self.state, time.time(), cfg, counted)
        missing = set()
        for phase in PHASES[:-1]:
            holder = self.lock_holder()
            if holder:
                self.state = gang_abandoned(self.state, time.time(), phase, holder)
                self.save()
                _log(self.state["last_error"])
                return
            if phase == "stop":
                self.publish(phase)
                docker.act("stop", cfg["engine_container"], cfg["stop_timeout"])
            elif phase == "ray":  # the head's own Ray node first: the workers' join it
                if cfg.get("ray_container"):
                    docker.act("restart", cfg["ray_container"], cfg["stop_timeout"])
                self.publish(phase)
            else:
                self.publish(phase)
                docker.act("start", cfg["engine_container"])
            missing.update(self.wait_workers(phase))
        self.state = gang_done(self.state, time.time(), cfg, sorted(missing))
        self.save()
        _log("gang restart, generation %d: done%s" % (
            self.state["generation"], "; no answer from " + ", ".join(sorted(missing)) if missing else ""))

    def failed_gang(self, exc):
        """A Docker call of the gang restart failed: the engine is started again in any case (a
        stopped engine would read as 'stopped by hand' and never be watched again)."""
        self.state["last_error"] = "the gang restart failed: %s" % exc
        _log(self.state["last_error"])
        try:
            self.publish("engine")
            self.docker.act("start", self.cfg["engine_container"])
        except Exception as again:  # pylint: disable=broad-except
            _log("starting %s again failed too: %s" % (self.cfg["engine_container"], again))
        self.state = gang_done(self.state, time.time(), self.cfg, ["(failed: %s)" % exc])

    def serve(self):
        head = self

        import http.server  # pylint: disable=import-outside-toplevel
        from urllib.parse import parse_qs, urlparse  # pylint: disable=import-outside-toplevel

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # pylint: disable=invalid-name
                url = urlparse(self.path)
                if url.path != "/gang":
                    self.send_error(404)
                    return
                q = dict((k, v[0]) for k, v in parse_qs(url.query).items())
                try:
                    head.seen(q.get("host"), int(q.get("generation", 0)), q.get("phase", "done"))
                except ValueError:
                    pass
                doc = json.dumps(sign(_key(head.cfg), head.published())).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(doc)))
                self.end_headers()
                self.wfile.write(doc)

            def log_message(self, *args):  # quiet: one line per poll would bury the log
                return

        server = http.server.ThreadingHTTPServer((self.cfg["listen"], int(self.cfg["port"])), Handler)
        thread = threading.Thread(target=server.serve_forever)
        thread.daemon = True
        thread.start()

    def run(self):
        cfg = self.cfg
        self.serve()
        if self.state.get("phase") not in (None, "done", ABANDONED):
            _log("a gang restart was cut short (generation %s, %s): running it again" % (
                self.state.get("generation"), self.state.get("phase")))
            self.gang(counted=False)
        while True:
            t0 = time.time()
            paused, idle = self.paused_by(), None
            busy = started = None
            try:
                idle, started = self.idle()
                ok, error = (False, None) if idle else probe(cfg, self.api_key())
            except Exception as exc:  # pylint: disable=broad-except
                ok, error = False, "Docker did not answer: %s" % exc
            if not ok and not idle:
                tokens = engine_tokens(cfg)
                if tokens is not None and self.tokens is not None and tokens > self.tokens:
                    busy = tokens - self.tokens
                self.tokens = tokens
            else:
                self.tokens = None
            before = self.state.get("state")
            self.state, action = decide(self.state, ok, error, time.time(), cfg, paused, idle, busy, started)
            if self.state["state"] != before:
                why = self.state.get("paused_by") or self.state.get("last_error")
                _log("%s -> %s%s" % (before, self.state["state"], ": %s" % why if why else ""))
            if action == "restart":
                try:
                    self.gang()
                except Exception as exc:  # pylint: disable=broad-except
                    self.failed_gang(exc)
            self.save()
            time.sleep(max(0.0, cfg["interval"] - (time.time() - t0)))

    def api_key(self):
        try:
            with open(self.cfg.get("api_key_file") or "/nonexistent") as f:
                return f.read().strip()
        except (IOError, OSError):
            return ""


class Worker(object):
    def __init__(self, cfg, docker):
        self.cfg, self.docker = cfg, docker
        self.state = _read_json(cfg["state_file"]) or dict(new_state("worker"), generation=None)
        self.state["role"] = "worker"

    def run(self):
        cfg = self.cfg
        actions = {"stop": ("stop", cfg["engine_container"]), "engine": ("start", cfg["engine_container"])}
        if cfg.get("ray_container"):  # none in a launch without Ray
            actions["ray"] = ("restart", cfg["ray_container"])
        while True:
            gen, phase = self.state.get("generation"), self.state.get("phase") or "done"
            url = "%s/gang?host=%s&generation=%s&phase=%s" % (cfg["head_url"], cfg["host"], gen or 0, phase)
            try:
                doc = json.loads(_open(url, 10).read().decode("utf-8"))
                if not verified(_key(cfg), doc):
                    raise ValueError("the head's answer is not signed with this cluster's Ray token: ignored")
                published = (int(doc["generation"]), doc["phase"])
                self.state.update(last_contact=time.time(), last_error=None)
                if gen is None:  # first contact: what the head has finished is not ours to repeat
                    gen, phase = (published[0], "done") if published[1] == "done" else (published[0] - 1, "done")
                    self.state.update(generation=gen, phase=phase)
                if published[1] == ABANDONED and published[0] >= gen and phase != ABANDONED:
                    _log("generation %d abandoned by the head (a deploy or teardown took the lock): "
                         "the rest of it is left to that run" % published[0])
                    self.state.update(generation=published[0], phase=ABANDONED)
                for step in pending((gen, phase), published):
                    if step in actions:
                        verb, name = actions[step]
                        _log("generation %d, %s: docker %s %s -> %s" % (
                            published[0], step, verb, name, self.docker.act(verb, name, cfg["stop_timeout"])))
                    self.state.update(generation=published[0], phase=step)
                    _write_json(cfg["state_file"], self.state)
            except Exception as exc:  # pylint: disable=broad-except
                self.state["last_error"] = "the head's agent at %s: %s" % (cfg["head_url"], exc)
            _write_json(cfg["state_file"], self.state)
            time.sleep(cfg["poll"])


def _stop(signum, frame):  # pylint: disable=unused-argument
    raise SystemExit(0)


def main(argv):
    # PID 1 of its container: without a handler SIGTERM is ignored and `docker stop` waits to kill
    signal.signal(signal.SIGTERM, _stop)
    cfg = config(json.loads(argv[1]))
    docker = Docker(cfg.get("docker_socket") or "/var/run/docker.sock", timeout=cfg["stop_timeout"] + 60)
    _log("sparkops watchdog: %s agent on %s" % (cfg["role"], cfg["host"]))
    (Head if cfg["role"] == "head" else Worker)(cfg, docker).run()


if __name__ == "__main__":
    main(sys.argv)
