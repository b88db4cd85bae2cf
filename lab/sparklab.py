"""sparklab -- the lab: N simulated DGX Sparks and a registry on one Linux machine.

Every simulated Spark is a network namespace with its own mount/UTS/PID
namespaces, its own sshd and its own dockerd (see lab/host-init.sh):

    management  10.77.0.0/24     controller 10.77.0.1, registry 10.77.0.5:5000,
                                 sparkN 10.77.0.(10+N) on interface enP7s7
    fabric      192.168.77.0/24  sparkN 192.168.77.(10+N) on enp1s0f1np1, MTU 9000

Nothing is routed out of the lab bridges. The hosts have no GPU and no RDMA:
the lab installs clearly labelled stand-ins (lab/standins/) for nvidia-smi and
nvidia-container-runtime-hook. Images are built from a debootstrap root,
written straight into the lab registry through its HTTP API (no Docker engine
and no internet registry on the controller), and cached by content.

    lab/lab up [--hosts N] [--fresh | --reset] [--docker26 HOSTS]
                                       bring the lab up (idempotent); --docker26 spark2: those
                                       hosts run a current Docker (26.1, containerd image store,
                                       API 1.44 at least, as Docker 29), the others Debian 12's 20.10
    lab/lab down [--purge]             take it down; --purge also drops host disks
    lab/lab status [--json]            what runs
    lab/lab images                     build and push the lab images only
    lab/lab deps                       install the Debian packages the lab needs
    lab/lab old-model                  start "the old model" on every host (what deploy frees)
    lab/lab ssh HOST [COMMAND...]      a shell on a simulated Spark
"""
import argparse
import gzip
import hashlib
import http.client
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STATE = os.environ.get("SPARKOPS_LAB_DIR", "/var/lib/sparkops-lab")
CACHE = os.environ.get("SPARKOPS_LAB_CACHE", "/var/cache/sparkops-lab")
STATE_FILE = os.path.join(STATE, "lab.json")
SSH_DIR = os.path.join(STATE, "ssh")
KEY = os.path.join(SSH_DIR, "id_ed25519")
KNOWN_HOSTS = os.path.join(SSH_DIR, "known_hosts")

MGMT_BRIDGE, FABRIC_BRIDGE = "splab-mgmt", "splab-fab"
MGMT_PREFIX, FABRIC_PREFIX = "10.77.0", "192.168.77"
CONTROLLER_IP = MGMT_PREFIX + ".1"
REGISTRY_NS, REGISTRY_IP, REGISTRY_PORT = "sparkreg", MGMT_PREFIX + ".5", 5000
REGISTRY = "%s:%d" % (REGISTRY_IP, REGISTRY_PORT)
# The same registry (the same storage) behind htpasswd authentication, as private registries are
AUTH_PORT = 5001
AUTH_REGISTRY = "%s:%d" % (REGISTRY_IP, AUTH_PORT)
AUTH_USER, AUTH_PASSWORD = "sparkops-lab", "lab-registry-canary-7f3a"
MGMT_IFACE, FABRIC_IFACE, FABRIC_MTU = "enP7s7", "enp1s0f1np1", 9000
IPT_CHAIN = "SPARKOPS-LAB"
MAX_HOSTS = 40

RAY_VERSION = "2.60.0"
TORCH_VERSION = "2.13.0"  # the CPU build (the lab has no GPU): gloo collectives for the fabric preflight
DEBIAN_SUITE = "bookworm"
BASE_PACKAGES = ["python3", "ca-certificates", "procps", "iproute2", "curl"]
ENGINE_IMAGE = "sparkops/lab-engine"
BASE_IMAGE = "sparkops/lab-base"
# Real engine releases from PyPI: their Python source trees (model registries included) and
# dist-info go into the lab images, installed the way the official images install them
# (vLLM as a wheel; SGLang editable from /sgl-workspace/sglang/python). Nothing is compiled:
# the images cannot run these engines (no GPU, no torch), only be probed.
ENGINE_RELEASES = [
    # (image repo:tag, engine, version, how it is installed, Ray?, platform (None: this machine's),
    #  image style: the ENTRYPOINT/CMD/ENV/WORKDIR of a real image of that kind, IMAGE_STYLES)
    ("sparkops/lab-vllm:0.14.0", "vllm", "0.14.0", "wheel", True, None, "ngc"),  # no Qwen3.5
    ("sparkops/lab-sglang:0.5.4", "sglang", "0.5.4", "editable-pth", True, None, "sglang"),  # no Qwen3.5
    ("sparkops/lab-vllm:0.17.0-arm64", "vllm", "0.17.0", "wheel", True, ("arm64", "v8"),  # wrong CPU here
     "vllm-official"),
    ("sparkops/lab-vllm:0.17.0", "vllm", "0.17.0", "wheel", True, None, "vllm-official"),  # has Qwen3.5
    # as stock vLLM images ship now (>= 0.18): no Ray; served natively (--nnodes, --headless ranks)
    ("sparkops/lab-vllm:0.17.0-noray", "vllm", "0.17.0", "wheel", False, None, "vllm-official"),
    # what users pull in late 2026: vLLM 0.34.0 as its stock image ships it (no Ray; its serve options
    # in entrypoints/common/cli_args.py)
    ("sparkops/lab-vllm:0.34.0", "vllm", "0.34.0", "wheel", False, None, "vllm-official"),
    ("sparkops/lab-sglang:0.5.10", "sglang", "0.5.10", "editable-finder", False, None, "sglang"),  # no Ray
    # the same SGLang with Ray: a candidate the deploy can run SGLang's multi-node launcher from
    ("sparkops/lab-sglang:0.5.10-ray", "sglang", "0.5.10", "editable-finder", True, None, "sglang"),
    # what users pull in late 2026 (its options in srt/arg_groups/fields/, the wheel built per Python:
    # its .py files), no Ray
    ("sparkops/lab-sglang:0.5.23", "sglang", "0.5.23", "editable-finder", False, None, "sglang"),
]
# What the real images' Dockerfiles set, so that every container the collection starts from a
# candidate must set its entrypoint itself (as on real hosts):
# - vLLM's official image (vllm/vllm-openai, docker/Dockerfile): WORKDIR /vllm-workspace,
#   ENV VLLM_USAGE_SOURCE=production-docker-image, ENTRYPOINT ["vllm", "serve"] (older ones:
#   python3 -m vllm.entrypoints.openai.api_server); the `vllm` console script is the wheel's.
# - NGC's images (nvcr.io/nvidia/vllm): ENTRYPOINT a wrapper that prints NVIDIA's banner and
#   execs its arguments (here a LAB STAND-IN of that script, labelled), WORKDIR /workspace.
# - SGLang's images (lmsysorg/sglang): no ENTRYPOINT, CMD a shell, WORKDIR /sgl-workspace.
NGC_ENTRYPOINT = "/opt/nvidia/nvidia_entrypoint.sh"
IMAGE_STYLES = {
    "vllm-official": {"Entrypoint": ["vllm", "serve"], "Cmd": None, "WorkingDir": "/vllm-workspace",
                      "Env": ["VLLM_USAGE_SOURCE=production-docker-image"]},
    "ngc": {"Entrypoint": [NGC_ENTRYPOINT], "Cmd": ["/bin/bash"], "WorkingDir": "/workspace",
            "Env": ["NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"]},
    "sglang": {"Entrypoint": None, "Cmd": ["/bin/bash"], "WorkingDir": "/sgl-workspace", "Env": []},
}
NGC_WRAPPER = """#!/bin/bash
# LAB STAND-IN of the entrypoint script of NVIDIA's NGC containers: prints a banner, then
# runs its arguments (as the real one does). Not NVIDIA's file.
cat <<'BANNER'

=============
== vLLM ==
=============

NVIDIA Release 26.01 (sparkops lab stand-in of the NGC banner)
BANNER
if [ $# -eq 0 ]; then exec /bin/bash; fi
exec "$@"
"""
SGLANG_SRC = "sgl-workspace/sglang/python"
SITE = "usr/local/lib/python3.11/dist-packages"

# apt package -> a file it provides; missing files get their packages installed
NEEDED = {
    "docker.io": "/usr/sbin/dockerd",
    "docker-registry": "/usr/bin/docker-registry",
    "openssh-server": "/usr/sbin/sshd",
    "openssh-client": "/usr/bin/ssh-keygen",
    "debootstrap": "/usr/sbin/debootstrap",
    "tini": "/usr/bin/tini",
    "iproute2": "/usr/sbin/ip",
    "iptables": "/usr/sbin/iptables",
    "util-linux": "/usr/bin/unshare",
}


class LabError(Exception):
    """An error a person can act on: what was expected, what was found, what to do."""


def log(msg):
    print("lab: " + msg, flush=True)


def run(argv, check=True, capture=True, **kw):
    res = subprocess.run(argv, stdout=subprocess.PIPE if capture else None,
                         stderr=subprocess.PIPE if capture else None, text=True, check=False, **kw)
    if check and res.returncode != 0:
        raise LabError("command failed (exit %d): %s\n%s" % (
            res.returncode, " ".join(argv), (res.stderr or res.stdout or "").strip()[-2000:]))
    return res


DOWNLOAD_ATTEMPTS = int(os.environ.get("SPARKOPS_LAB_DOWNLOAD_ATTEMPTS", "4"))
DOWNLOAD_PAUSE = float(os.environ.get("SPARKOPS_LAB_DOWNLOAD_PAUSE", "5"))


def download(what, source, argv, got, before=None, **kw):
    """Run a command that downloads `what` from `source` until it exits 0 and got(result) finds
    what it should have brought (got returns None, or what is missing). A failed attempt is said,
    the next comes after a pause; the last one's failure is a LabError naming the source and the
    error. Package tools exit 0 on some failures (`apt-get update` does when an index fails to
    download), so the exit status alone is not enough."""
    problem = None
    for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
        if before:
            before()  # e.g. clear what a failed attempt left half-written
        res = run(argv, check=False, **kw)
        if res.returncode != 0:
            problem = "exit %d: %s" % (res.returncode, (res.stderr or res.stdout or "").strip()[-1500:])
        else:
            problem = got(res)
        if problem is None:
            return res
        if attempt < DOWNLOAD_ATTEMPTS:
            log("%s from %s: attempt %d of %d failed (%s); trying again in %.0f s" % (
                what, source, attempt, DOWNLOAD_ATTEMPTS, problem.splitlines()[0][:300], DOWNLOAD_PAUSE))
            time.sleep(DOWNLOAD_PAUSE)
    raise LabError("could not fetch %s from %s (%d attempts): %s\ncommand: %s\nCheck that this machine "
                   "reaches %s (its apt and pip configuration), then run the command again: what was "
                   "fetched before is kept in %s"
                   % (what, source, DOWNLOAD_ATTEMPTS, problem, " ".join(argv), source, CACHE))


def apt_failures(res):
    """What `apt-get update`/`download` printed as failed ('Err:', 'W: Failed to fetch', 'E: ...'),
    or None: it exits 0 when an index could not be fetched."""
    bad = [line.strip() for line in ((res.stdout or "") + "\n" + (res.stderr or "")).splitlines()
           if line.startswith(("Err:", "E:")) or "Failed to fetch" in line or "Some index files failed" in line]
    return "; ".join(bad) if bad else None


def apt_lists_hold(lists_dir, suite):
    """A check for download(): the package lists of `suite` are under lists_dir."""
    def check(res):
        failed = apt_failures(res)
        if failed:
            return failed
        found = [f for f in os.listdir(lists_dir) if "_%s_" % suite in f and "Packages" in f]
        return None if found else "no %s package list in %s after the update" % (suite, lists_dir)
    return check


def debs_in(directory, packages):
    """A check for download(): a .deb of every package is in directory."""
    def check(res):
        failed = apt_failures(res)
        if failed:
            return failed
        have = os.listdir(directory)
        missing = [p for p in packages if not any(f.startswith(p + "_") and f.endswith(".deb") for f in have)]
        return "no .deb of %s in %s" % (", ".join(missing), directory) if missing else None
    return check


def host_name(i):
    return "spark%d" % i


def host_dir(name):
    return os.path.join(STATE, "hosts", name)


def mgmt_ip(i):
    return "%s.%d" % (MGMT_PREFIX, 10 + i)


def fabric_ip(i):
    return "%s.%d" % (FABRIC_PREFIX, 10 + i)


def load_state():
    try:
        with open(STATE_FILE) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"hosts": {}, "registry_pid": None}
    except ValueError as exc:
        raise LabError("lab state file %s is corrupt (%s): run 'lab/lab down' then "
                       "'lab/lab up'" % (STATE_FILE, exc))


def save_state(state):
    os.makedirs(STATE, exist_ok=True)
    tmp = STATE_FILE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=2, sort_keys=True)
    os.replace(tmp, STATE_FILE)


def alive_after_all(pid):
    """A second look at a pid that seemed gone: while a process execs (nsenter becoming unshare)
    its /proc cmdline reads empty for a moment. Dead is a zombie, or gone, twice 0.5 s apart."""
    for dummy in range(2):
        time.sleep(0.5)
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and pid_alive(pid):
            return True
    return False


def pid_alive(pid):
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie or a recycled pid is not ours
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return len(f.read()) > 0
    except OSError:
        return False


def netns_exists(name):
    return os.path.exists("/run/netns/" + name)


def link_exists(name, netns=None):
    argv = ["ip"] + (["-n", netns] if netns else []) + ["link", "show", name]
    return run(argv, check=False).returncode == 0


# --------------------------------------------------------------------------- preconditions

def check_machine():
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, mounts, dockerd); found uid %d: "
                       "run it as root, e.g. 'sudo make lab'" % os.geteuid())
    if not shutil.which("ip") and not os.path.exists(NEEDED["iproute2"]):
        ensure_packages()
    probe = "splab-probe-%d" % os.getpid()
    res = run(["ip", "netns", "add", probe], check=False)
    if res.returncode != 0:
        raise LabError("network namespaces are not available here ('ip netns add' failed: %s); "
                       "the lab needs a Linux machine (or VM) where root can create network "
                       "namespaces" % res.stderr.strip())
    run(["ip", "netns", "del", probe], check=False)


def ensure_packages():
    missing = [pkg for pkg, path in NEEDED.items() if not os.path.exists(path)]
    if run(["/usr/bin/python3", "-c", "import requests"], check=False).returncode != 0:
        missing.append("python3-requests")  # community.docker on the targets
    if not missing:
        return
    if not shutil.which("apt-get"):
        raise LabError("missing %s and no apt-get to install them: the lab expects Debian 12 "
                       "or Ubuntu; install these packages by hand" % ", ".join(missing))
    log("installing " + " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    download("Debian's package lists", "this machine's apt sources", ["apt-get", "update", "-qq"], apt_failures,
             env=env)
    download(", ".join(missing), "this machine's apt sources",
             ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing,
             lambda res: apt_failures(res) or (None if all(os.path.exists(NEEDED[p]) for p in missing if p in NEEDED)
                                               else "installed, but a file it should bring is absent"), env=env)


# --------------------------------------------------------------------------- network

def ensure_bridges():
    for br, addr, mtu in ((MGMT_BRIDGE, CONTROLLER_IP + "/24", 1500),
                          (FABRIC_BRIDGE, FABRIC_PREFIX + ".1/24", FABRIC_MTU)):
        if not link_exists(br):
            run(["ip", "link", "add", br, "type", "bridge"])
            run(["ip", "link", "set", br, "mtu", str(mtu)])
            run(["ip", "addr", "add", addr, "dev", br])
        run(["ip", "link", "set", br, "up"])
    # Nothing leaves the lab bridges: traffic between lab hosts (bridged) and to
    # the controller (INPUT) is fine; anything forwarded elsewhere is dropped.
    if run(["iptables", "-w", "-n", "-L", IPT_CHAIN], check=False).returncode != 0:
        run(["iptables", "-w", "-N", IPT_CHAIN])
        for br in (MGMT_BRIDGE, FABRIC_BRIDGE):
            run(["iptables", "-w", "-A", IPT_CHAIN, "-i", br, "-o", br, "-j", "ACCEPT"])
            run(["iptables", "-w", "-A", IPT_CHAIN, "-i", br, "-j", "DROP"])
            run(["iptables", "-w", "-A", IPT_CHAIN, "-o", br, "-j", "DROP"])
    if run(["iptables", "-w", "-C", "FORWARD", "-j", IPT_CHAIN], check=False).returncode != 0:
        run(["iptables", "-w", "-I", "FORWARD", "1", "-j", IPT_CHAIN])


def remove_bridges():
    while run(["iptables", "-w", "-D", "FORWARD", "-j", IPT_CHAIN], check=False).returncode == 0:
        pass
    if run(["iptables", "-w", "-n", "-L", IPT_CHAIN], check=False).returncode == 0:
        run(["iptables", "-w", "-F", IPT_CHAIN])
        run(["iptables", "-w", "-X", IPT_CHAIN])
    for br in (MGMT_BRIDGE, FABRIC_BRIDGE):
        if link_exists(br):
            run(["ip", "link", "del", br])


def remove_host_links():
    """The hosts' veths on this side (spl<N>m, spl<N>f), whatever is left of them: the kernel frees
    a powered-off host's namespace, and its veths with it, asynchronously - seconds later on a busy
    machine - and `down` must leave none behind when it says so."""
    out = run(["ip", "-o", "link", "show"], check=False).stdout
    for name in sorted(set(re.findall(r"^\d+: (spl\d+[mf])[@:]", out, re.M))):
        del_link(name)


def stable_mac(ns, iface):
    """A locally administered unicast MAC derived from the host and interface names."""
    digest = hashlib.sha256(("%s/%s" % (ns, iface)).encode()).digest()
    return "02:" + ":".join("%02x" % b for b in digest[:5])


def del_link(name):
    """Remove host-side link `name` if it is there. The veth of a host just powered off goes
    away by itself once the kernel frees its old namespace (its processes still being reaped),
    maybe between our look and our delete: a delete that finds nothing is fine; one still
    there after 10 s is an error."""
    for dummy in range(400):
        if not link_exists(name):
            return
        run(["ip", "link", "del", name], check=False)
        time.sleep(0.025)
    raise LabError("the lab could not remove the link %s (ip link del %s)" % (name, name))


def plumb(ns, index_tag, links):
    """Create netns `ns` with veth pairs: links = [(inner name, bridge, cidr, mtu)]."""
    if not netns_exists(ns):
        run(["ip", "netns", "add", ns])
    for n, (inner, bridge, cidr, mtu) in enumerate(links):
        outer = "spl%s%s" % (index_tag, "mf"[n])
        if not link_exists(inner, ns):
            del_link(outer)
            run(["ip", "link", "add", outer, "mtu", str(mtu), "type", "veth",
                 "peer", "name", inner, "mtu", str(mtu), "netns", ns])
            run(["ip", "link", "set", outer, "master", bridge, "up"])
            # a MAC that stays the same when the host restarts: its peers' ARP caches stay right
            # (a new MAC each start left them sending to the old one for seconds)
            run(["ip", "-n", ns, "link", "set", inner, "address", stable_mac(ns, inner)])
            run(["ip", "-n", ns, "addr", "add", cidr, "dev", inner])
        run(["ip", "-n", ns, "link", "set", inner, "up"])
    run(["ip", "-n", ns, "link", "set", "lo", "up"])
    if "default" not in run(["ip", "-n", ns, "route", "show", "default"]).stdout:
        run(["ip", "-n", ns, "route", "add", "default", "via", CONTROLLER_IP])


def unplumb(ns):
    if netns_exists(ns):
        run(["ip", "netns", "del", ns], check=False)


# --------------------------------------------------------------------------- registry

def start_registry(state, state_key, cfg, log_path, ready, what):
    """Serve docker-registry with config `cfg` in the registry's namespace, its pid kept in
    state[state_key]; `ready()` says when it answers (20 s at most)."""
    logf = open(log_path, "ab")
    proc = subprocess.Popen(["ip", "netns", "exec", REGISTRY_NS, "docker-registry", "serve", cfg],
                            stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    state[state_key] = proc.pid
    save_state(state)
    for dummy in range(100):
        if ready():
            return
        time.sleep(0.2)
    raise LabError("the %s did not answer within 20 s; see %s" % (what, log_path))


def lab_registries():
    """The pids of every docker-registry serving a config under this lab's STATE - as this mount
    namespace sees it (lab/isolated.sh's lanes each bind their own there) - whether the state file
    names it or not (a pid overwritten when a busy machine answered late)."""
    try:
        mine = os.stat(STATE)
    except OSError:
        return []
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
            if os.path.basename(argv[0]) != b"docker-registry":
                continue
            theirs = os.stat("/proc/%s/root%s" % (pid, STATE))
        except OSError:  # gone meanwhile
            continue
        if (theirs.st_dev, theirs.st_ino) == (mine.st_dev, mine.st_ino) and any(
                a.startswith(STATE.encode() + b"/") for a in argv):
            found.append(int(pid))
    return found


def stop_registries(pids):
    """SIGTERM each registry (its own session), SIGKILL what still runs 5 s later."""
    pids = [p for p in pids if pid_alive(p)]
    for pid in pids:
        os.killpg(pid, signal.SIGTERM)
    deadline = time.time() + 5
    while time.time() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)


def ensure_registry(state):
    plumb(REGISTRY_NS, "r", [(MGMT_IFACE, MGMT_BRIDGE, REGISTRY_IP + "/24", 1500)])
    if pid_alive(state.get("registry_pid")) and registry_ready(5):
        return
    # one that does not answer (wedged, or started by a run that lost its state file) would hold the
    # port, and the new one would exit while the old one outlived `lab down`
    stop_registries([p for p in lab_registries() if p != state.get("auth_registry_pid")])
    rdir = os.path.join(CACHE, "registry")
    os.makedirs(rdir, exist_ok=True)
    os.makedirs(STATE, exist_ok=True)
    cfg = os.path.join(STATE, "registry.yml")
    write(cfg, "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
               "    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n" % (rdir, REGISTRY))
    start_registry(state, "registry_pid", cfg, os.path.join(STATE, "registry.log"),
                   lambda: registry_ready(0), "lab registry on %s" % REGISTRY)


def bcrypt_hash(password):
    """A bcrypt hash for the registry's htpasswd file (the only format it takes), from the C
    library's crypt (glibc/libxcrypt on Debian)."""
    import warnings  # pylint: disable=import-outside-toplevel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # pylint: disable=import-outside-toplevel,deprecated-module
    h = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))
    if not h or not h.startswith("$2"):
        raise LabError("this Python's crypt cannot make bcrypt hashes (got %r): the authenticated "
                       "lab registry needs one" % h)
    return h


def ensure_auth_registry(state):
    """AUTH_REGISTRY: the lab registry's storage served again, read-only, behind htpasswd."""
    if pid_alive(state.get("auth_registry_pid")) and port_open(REGISTRY_IP, AUTH_PORT):
        return
    adir = os.path.join(STATE, "registry-auth")
    os.makedirs(adir, exist_ok=True)
    write(os.path.join(adir, "htpasswd"), "%s:%s\n" % (AUTH_USER, bcrypt_hash(AUTH_PASSWORD)), 0o600)
    cfg = os.path.join(adir, "registry.yml")
    write(cfg, "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n"
               "  maintenance:\n    readonly:\n      enabled: true\nauth:\n  htpasswd:\n    realm: sparkops-lab\n"
               "    path: %s\nhttp:\n  addr: %s\n"
               % (os.path.join(CACHE, "registry"), os.path.join(adir, "htpasswd"), AUTH_REGISTRY), 0o600)
    start_registry(state, "auth_registry_pid", cfg, os.path.join(adir, "registry.log"),
                   lambda: port_open(REGISTRY_IP, AUTH_PORT), "authenticated lab registry on %s" % AUTH_REGISTRY)


def registry_request(method, path, body=None, headers=None, timeout=60, attempts=None):
    """One HTTP request to the lab registry. Requests without a streamed body are tried up to
    3 times: on a busy 2-core machine one can stall past its timeout while the next answers."""
    attempts = attempts or (1 if hasattr(body, "read") else 3)
    for attempt in range(1, attempts + 1):
        conn = http.client.HTTPConnection(REGISTRY_IP, REGISTRY_PORT, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, dict(resp.getheaders()), data
        except OSError as exc:
            if attempt == attempts:
                raise
            log("registry %s %s: %s; trying again (%d of %d)" % (method, path[:80], exc, attempt + 1, attempts))
            time.sleep(1)
        finally:
            conn.close()
    raise AssertionError("unreachable")


def registry_ready(timeout):
    deadline = time.time() + timeout
    while True:
        try:
            if registry_request("GET", "/v2/", timeout=2, attempts=1)[0] == 200:
                return True
        except OSError:
            pass
        if time.time() > deadline:
            return False
        time.sleep(0.2)


def push_blob(repo, digest, path=None, data=None):
    if registry_request("HEAD", "/v2/%s/blobs/%s" % (repo, digest))[0] == 200:
        return False
    status, headers, body = registry_request("POST", "/v2/%s/blobs/uploads/" % repo)
    if status != 202:
        raise LabError("registry refused an upload of %s: HTTP %d %s" % (repo, status, body[:200]))
    loc = headers.get("Location") or headers.get("location")
    if loc.startswith("http"):
        loc = "/" + loc.split("/", 3)[3]
    loc += ("&" if "?" in loc else "?") + "digest=" + digest
    size = os.path.getsize(path) if path else len(data)
    hdrs = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
    if path:
        with open(path, "rb") as f:
            status, dummy, body = registry_request("PUT", loc, body=f, headers=hdrs, timeout=600)
    else:
        status, dummy, body = registry_request("PUT", loc, body=data, headers=hdrs)
    if status != 201:
        raise LabError("registry refused blob %s: HTTP %d %s" % (digest, status, body[:200]))
    return True


# --------------------------------------------------------------------------- images

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def tar_layer(src_dir, key):
    """Pack src_dir into a cached gzip layer; returns {digest, diff_id, size, path}."""
    ldir = os.path.join(CACHE, "layers")
    os.makedirs(ldir, exist_ok=True)
    meta_path = os.path.join(ldir, key + ".json")
    blob = os.path.join(ldir, key + ".tar.gz")
    raw = hashlib.sha256()
    proc = subprocess.Popen(["tar", "-C", src_dir, "--numeric-owner", "--exclude=./dev/*",
                             "--exclude=./proc/*", "--exclude=./sys/*", "-cf", "-", "."],
                            stdout=subprocess.PIPE)
    with open(blob + ".tmp", "wb") as out:
        with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1, mtime=0) as gz:
            for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):
                raw.update(chunk)
                gz.write(chunk)
    if proc.wait() != 0:
        raise LabError("tar of %s failed" % src_dir)
    os.replace(blob + ".tmp", blob)
    meta = {"digest": sha256_file(blob), "diff_id": "sha256:" + raw.hexdigest(),
            "size": os.path.getsize(blob), "path": blob}
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    return meta


def cached_layer(key):
    meta_path = os.path.join(CACHE, "layers", key + ".json")
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        if os.path.getsize(meta["path"]) == meta["size"]:
            return meta
    except (OSError, ValueError, KeyError):
        pass
    return None


def recipe_key(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def file_digest(*paths):
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


# A current Docker for the hosts named with --docker26: Debian trixie's docker.io and containerd,
# unpacked (dpkg -x) into the lab cache, so the machine's Docker 20.10 stays as it is. Their
# dockerd runs the containerd image store and refuses API versions below 1.44 (the daemon's
# DOCKER_MIN_API_VERSION, which Docker 29 raises to 1.44 by default). trixie's runc needs a newer
# glibc than bookworm's: the machine's runc serves both Dockers.
DOCKER26 = os.path.join(CACHE, "docker26")
# tini: trixie's docker.io ships /usr/bin/docker-init as a link to tini-static, which tini brings
# (without it `docker run --init` fails on such a host, and every `lab up` fetched again)
DOCKER26_PACKAGES = ("docker.io", "containerd", "tini")
DOCKER26_BINARIES = ("usr/sbin/dockerd", "usr/sbin/docker-proxy", "usr/bin/docker-init", "usr/bin/containerd",
                     "usr/bin/containerd-shim-runc-v2", "usr/bin/ctr")
DOCKER26_MIN_API = "1.44"


def ensure_docker26():
    """The directory holding the current Docker's binaries (fetched and unpacked once)."""
    bindir = os.path.join(DOCKER26, "bin")
    if all(os.path.exists(os.path.join(bindir, os.path.basename(b))) for b in DOCKER26_BINARIES):
        return bindir
    log("fetching Debian trixie's docker.io, containerd and tini (unpacked into %s; nothing installed)" % DOCKER26)
    apt, debs, root = (os.path.join(DOCKER26, d) for d in ("apt", "debs", "root"))
    for d in (os.path.join(apt, "lists", "partial"), os.path.join(apt, "cache", "archives", "partial"), debs):
        os.makedirs(d, exist_ok=True)
    sources = os.path.join(apt, "sources.list")
    write(sources, "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s trixie main\n"
          % debian_mirror())
    opts = ["-o", "Dir::Etc::sourcelist=" + sources, "-o", "Dir::Etc::sourceparts=/nonexistent",
            "-o", "Dir::State::Lists=" + os.path.join(apt, "lists"), "-o", "Dir::Cache=" + os.path.join(apt, "cache"),
            "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root"]
    mirror = "%s (trixie)" % debian_mirror()
    download("Debian trixie's package lists", mirror, ["apt-get"] + opts + ["update", "-qq"],
             apt_lists_hold(os.path.join(apt, "lists"), "trixie"))
    download(" and ".join(DOCKER26_PACKAGES), mirror, ["apt-get"] + opts + ["download"] + list(DOCKER26_PACKAGES),
             debs_in(debs, DOCKER26_PACKAGES), cwd=debs)
    for deb in sorted(os.listdir(debs)):
        run(["dpkg", "-x", os.path.join(debs, deb), root])
    os.makedirs(bindir, exist_ok=True)
    for b in DOCKER26_BINARIES:
        link = os.path.join(bindir, os.path.basename(b))
        if not os.path.lexists(link):
            os.symlink(os.path.join(root, b), link)
    dangling = [b for b in DOCKER26_BINARIES if not os.path.exists(os.path.join(bindir, os.path.basename(b)))]
    if dangling:
        raise LabError("the unpacked packages (%s) lack %s (under %s): a package of trixie now puts it elsewhere "
                       "or in another package; add that package to DOCKER26_PACKAGES in lab/sparklab.py"
                       % (", ".join(sorted(os.listdir(debs))), ", ".join(dangling), root))
    version = run([os.path.join(bindir, "dockerd"), "--version"]).stdout.strip()
    log("current Docker ready: %s" % version)
    return bindir


PROMTOOL = os.path.join(CACHE, "promtool")


def ensure_promtool():
    """promtool, from Debian's prometheus package unpacked into the cache (nothing installed, no
    Prometheus server started: the package's own install would start one). The static tests
    check the collection's alert rules with it."""
    tool = os.path.join(PROMTOOL, "root", "usr", "bin", "promtool")
    if os.path.exists(tool):
        return tool
    log("fetching Debian's prometheus package for promtool (unpacked into %s; nothing installed)" % PROMTOOL)
    debs = os.path.join(PROMTOOL, "debs")
    os.makedirs(debs, exist_ok=True)
    res = run(["apt-get", "download", "prometheus"], cwd=debs, check=False)
    if res.returncode != 0 or debs_in(debs, ["prometheus"])(res):  # no package lists on a fresh machine
        download("Debian's package lists", "this machine's apt sources", ["apt-get", "update", "-qq"], apt_failures)
        download("prometheus (for promtool)", "this machine's apt sources", ["apt-get", "download", "prometheus"],
                 debs_in(debs, ["prometheus"]), cwd=debs)
    for deb in sorted(os.listdir(debs)):
        run(["dpkg", "-x", os.path.join(debs, deb), os.path.join(PROMTOOL, "root")])
    log("promtool ready: %s" % run([tool, "--version"]).stdout.strip().splitlines()[0])
    return tool


def debian_mirror():
    """The Debian mirror this machine's apt already uses (no host is hard-coded)."""
    for path in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"):
        try:
            with open(path) as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("URIs:") and "security" not in line:
                        return line.split()[1]
                    if line.startswith("deb ") and "security" not in line:
                        return [w for w in line.split() if "://" in w][0]
        except OSError:
            continue
    raise LabError("no Debian mirror found in /etc/apt/sources.list(.d): the lab builds its "
                   "images with debootstrap from the mirror apt uses")


def arch():
    m = platform.machine()
    return {"x86_64": ("amd64", "x86_64"), "aarch64": ("arm64", "aarch64")}.get(m, (m, m))


def layer_base():
    key = recipe_key("base", DEBIAN_SUITE, BASE_PACKAGES, arch()[0])
    meta = cached_layer(key)
    if meta:
        return meta
    log("building the base root with debootstrap (%s, about a minute, cached after)" % DEBIAN_SUITE)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        root = os.path.join(tmp, "root")

        def rooted(res):  # pylint: disable=unused-argument
            return None if os.path.exists(os.path.join(root, "usr", "bin", "python3")) else \
                "debootstrap ended without %s/usr/bin/python3" % root

        # a failed debootstrap leaves a half root it will not write into again: each attempt starts clean
        download("a %s root (debootstrap)" % DEBIAN_SUITE, debian_mirror(),
                 ["debootstrap", "--variant=minbase", "--include=" + ",".join(BASE_PACKAGES), DEBIAN_SUITE, root,
                  debian_mirror()], rooted, before=lambda: shutil.rmtree(root, ignore_errors=True))
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in os.listdir(os.path.join(root, junk)):
                p = os.path.join(root, junk, entry)
                if os.path.isfile(p):
                    os.unlink(p)
        return tar_layer(root, key)


def wheel_ok(wdir, prefix):
    """A check for download(): a wheel named prefix* is in wdir and reads as a whole zip (a cut
    download leaves a file pip may not clean up)."""
    import zipfile  # pylint: disable=import-outside-toplevel
    found = [f for f in os.listdir(wdir) if f.startswith(prefix) and f.endswith(".whl")]
    if not found:
        return "no %s*.whl in %s" % (prefix, wdir)
    try:
        with zipfile.ZipFile(os.path.join(wdir, found[0])) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError) as exc:
        bad = str(exc)
    if bad:
        os.unlink(os.path.join(wdir, found[0]))
        return "%s is not a whole wheel (%s): removed" % (found[0], bad)
    return None


def dist_info_in(site, name, version):
    """The dist-info directory of NAME at VERSION under site, or None; a local version label may
    follow the version (the CPU build of torch installs torch-2.13.0+cpu.dist-info)."""
    prefix = "%s-%s" % (name, version)
    found = [f for f in (os.listdir(site) if os.path.isdir(site) else [])
             if f.startswith(prefix) and f.endswith(".dist-info") and f[len(prefix)] in ".+"]
    return found[0] if found else None


def pip_target(site, platforms, name, version):
    """pip install NAME==VERSION (cp311 binary wheels for the hosts' platform) into site, checked:
    its dist-info is there afterwards. Each attempt starts from an empty site."""
    def got(res):  # pylint: disable=unused-argument
        return None if dist_info_in(site, name, version) else \
            "pip ended without %s-%s*.dist-info in %s" % (name, version, site)
    download("%s %s (cp311 wheels)" % (name, version), "the package index pip uses",
             [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
              "--target", site, "--only-binary", ":all:", "--python-version", "3.11",
              "--implementation", "cp", "--abi", "cp311"] + platforms + ["%s==%s" % (name, version)],
             got, before=lambda: shutil.rmtree(site, ignore_errors=True))


def layer_ray():
    machine = arch()[1]
    key = recipe_key("ray", RAY_VERSION, machine, "cp311")
    meta = cached_layer(key)
    if meta:
        return meta
    log("installing Ray %s (cp311, %s) into a layer" % (RAY_VERSION, machine))
    platforms = []
    for tag in ("manylinux_2_36", "manylinux_2_34", "manylinux_2_31", "manylinux_2_28",
                "manylinux_2_24", "manylinux_2_17", "manylinux2014"):
        platforms += ["--platform", "%s_%s" % (tag, machine)]
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        site = os.path.join(tmp, "usr/local/lib/python3.11/dist-packages")
        pip_target(site, platforms, "ray", RAY_VERSION)
        shutil.rmtree(os.path.join(site, "bin"), ignore_errors=True)
        bindir = os.path.join(tmp, "usr/local/bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "ray"), "w") as f:
            f.write("#!/usr/bin/python3\nimport sys\nfrom ray.scripts.scripts import main\n"
                    "sys.exit(main())\n")
        os.chmod(os.path.join(bindir, "ray"), 0o755)
        return tar_layer(tmp, key)


def layer_torch():
    machine = arch()[1]
    key = recipe_key("torch", TORCH_VERSION, machine, "cp311", "cpu")
    meta = cached_layer(key)
    if meta:
        return meta
    log("installing torch %s (CPU, cp311, %s) into a layer" % (TORCH_VERSION, machine))
    platforms = []
    for tag in ("manylinux_2_36", "manylinux_2_28", "manylinux_2_17", "manylinux2014"):
        platforms += ["--platform", "%s_%s" % (tag, machine)]
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        site = os.path.join(tmp, "usr/local/lib/python3.11/dist-packages")
        pip_target(site, platforms, "torch", TORCH_VERSION)
        shutil.rmtree(os.path.join(site, "bin"), ignore_errors=True)
        return tar_layer(tmp, key)


def engine_wheel(engine, version):
    """The real release wheel from PyPI, arm64 for Python 3.12 as on a Spark (vLLM's abi3 wheels are
    tagged manylinux 2.28 or 2.31 by release; SGLang's were pure Python up to 0.5.1x, 0.5.2x's are
    built per Python: only their .py files are used)."""
    wdir = os.path.join(CACHE, "wheels")
    os.makedirs(wdir, exist_ok=True)
    prefix = "%s-%s-" % (engine, version)
    found = [f for f in os.listdir(wdir) if f.startswith(prefix) and f.endswith(".whl")]
    if not found:
        log("downloading the %s %s release wheel from PyPI" % (engine, version))
        extra = ["--python-version", "3.12"]
        for glibc in ("2_28", "2_31", "2_34"):
            extra += ["--platform", "manylinux_%s_aarch64" % glibc]
        download("the %s %s wheel" % (engine, version), "the package index pip uses",
                 [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                  "--no-deps", "--only-binary", ":all:", "-d", wdir] + extra + ["%s==%s" % (engine, version)],
                 lambda res: wheel_ok(wdir, prefix))
        found = [f for f in os.listdir(wdir) if f.startswith(prefix) and f.endswith(".whl")]
    if not found:
        raise LabError("pip download of %s==%s left no wheel in %s" % (engine, version, wdir))
    return os.path.join(wdir, found[0])


def extract_engine(wheel, root, engine, version, how):
    """Write the release's .py tree and dist-info under root, installed the way `how` says."""
    import zipfile  # pylint: disable=import-outside-toplevel
    site = os.path.join(root, SITE)
    pkg_root = os.path.join(root, SGLANG_SRC) if how.startswith("editable") else site
    info = "%s-%s.dist-info" % (engine, version)
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith(info + "/"):
                if name.split("/")[-1] not in ("METADATA", "entry_points.txt", "top_level.txt"):
                    continue
                dst = os.path.join(site, name)
            elif name.endswith(".py") and name.startswith(engine + "/"):
                dst = os.path.join(pkg_root, name)
            else:
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(dst, "wb") as f:
                f.write(z.read(name))
    write(os.path.join(site, info, "INSTALLER"), "pip\n")
    console_scripts(os.path.join(site, info, "entry_points.txt"), os.path.join(root, "usr/local/bin"))
    if how == "wheel":
        return
    src = "/" + SGLANG_SRC
    write(os.path.join(site, info, "direct_url.json"),
          json.dumps({"url": "file://" + src, "dir_info": {"editable": True}}) + "\n")
    if how == "editable-pth":  # a plain path line (setuptools' lenient mode, older pip)
        write(os.path.join(site, "__editable__.%s-%s.pth" % (engine, version)), src + "\n")
    else:  # setuptools' finder hook: a .pth that imports a module holding a MAPPING
        mod = "__editable___%s_%s_finder" % (engine, version.replace(".", "_"))
        write(os.path.join(site, "__editable__.%s-%s.pth" % (engine, version)),
              "import %s; %s.install()\n" % (mod, mod))
        write(os.path.join(site, mod + ".py"),
              "MAPPING = {%r: %r}\nNAMESPACES = {}\n\n\ndef install():\n    pass\n"
              % (engine, src + "/" + engine))


def console_scripts(entry_points, bindir):
    """The [console_scripts] of a dist-info's entry_points.txt as pip writes them."""
    if not os.path.exists(entry_points):
        return
    section = None
    with open(entry_points) as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]")
            elif section == "console_scripts" and "=" in line:
                name, target = [x.strip() for x in line.split("=", 1)]
                module, func = target.split(":")
                write(os.path.join(bindir, name), "#!/usr/bin/python3\nimport sys\nfrom %s import %s\n"
                      "if __name__ == \"__main__\":\n    sys.exit(%s())\n" % (module, func, func), 0o755)


def layer_engine(engine, version, how):
    wheel = engine_wheel(engine, version)
    key = recipe_key("engine", engine, version, how, os.path.basename(wheel), SITE, "console-scripts")
    meta = cached_layer(key)
    if meta:
        return meta
    log("writing the %s %s source tree (%s) into a layer" % (engine, version, how))
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        extract_engine(wheel, tmp, engine, version, how)
        return tar_layer(tmp, key)


def layer_files(name, files, links=None):
    """A small layer of files {image path: (text, mode)} and symbolic links {image path: target}."""
    links = links or {}
    key = recipe_key("files", name, sorted(files.items()), *(["links"] + sorted(links.items()) if links else []))
    meta = cached_layer(key)
    if meta:
        return meta
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        for path, (text, mode) in files.items():
            write(os.path.join(tmp, path.lstrip("/")), text, mode)
        for path, target in links.items():
            where = os.path.join(tmp, path.lstrip("/"))
            os.makedirs(os.path.dirname(where), exist_ok=True)
            os.symlink(target, where)
        return tar_layer(tmp, key)


# A crafted SGLang image for the static probe: a model file that is a link to a host path the
# image lacks (absolute), one that climbs above the image's root (relative), one at /etc/shadow,
# and a loop. The host holds HOST_ONLY_MODEL (the lab test writes it): were any link followed on
# the host, the probe would find its EntryClass and call the model native.
HOST_ONLY_MODEL = "/etc/sparkops-lab/host-only/qwen3_5.py"


def layer_crafted_links():
    site = "/" + SITE
    models = site + "/sglang/srt/models/"
    return layer_files("crafted-links", {
        site + "/sglang-0.5.10.dist-info/METADATA": ("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.10\n", 0o644),
        site + "/sglang/__init__.py": ("", 0o644),
        site + "/sglang/srt/__init__.py": ("", 0o644),
        models + "llama.py": ("class LlamaForCausalLM:\n    pass\n\n\nEntryClass = LlamaForCausalLM\n", 0o644),
        "/etc/sparkops-lab-crafted": ("A LAB TEST IMAGE: crafted symbolic links for the static probe.\n", 0o644),
    }, links={
        models + "qwen3_5.py": HOST_ONLY_MODEL,
        models + "qwen3_5_climb.py": "../" * 12 + HOST_ONLY_MODEL.lstrip("/"),
        models + "shadow.py": "/etc/shadow",
        models + "loop_a.py": "loop_b.py",
        models + "loop_b.py": "loop_a.py",
    })


def layer_model_server():
    with open(os.path.join(HERE, "standins", "model_server.py")) as f:
        text = f.read()
    return layer_files("model-server", {
        "/opt/sparkops-lab/model_server.py": (text, 0o644),
        "/etc/sparkops-lab-standin": ("This image's /opt/sparkops-lab/model_server.py is a LAB "
                                      "STAND-IN for an inference server (no GPU in the lab).\n",
                                      0o644)})


PUSHED = {}  # reference -> manifest digest, of every image this run pushed


def push_image(repo, tag, layers, labels, platform_=None, style=None):
    a, variant = platform_ or (arch()[0], None)
    st = IMAGE_STYLES[style] if style else {"Entrypoint": None, "Cmd": ["/bin/bash"], "WorkingDir": "", "Env": []}
    config = {
        "architecture": a, "os": "linux",
        "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                           "LANG=C.UTF-8"] + st["Env"],
                   "Entrypoint": st["Entrypoint"], "Cmd": st["Cmd"], "WorkingDir": st["WorkingDir"],
                   "Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": [m["diff_id"] for m in layers]},
        "history": [{"created_by": "sparkops lab layer %d" % i} for i in range(len(layers))],
    }
    if variant:
        config["variant"] = variant
    cfg = json.dumps(config, sort_keys=True).encode()
    cfg_digest = "sha256:" + hashlib.sha256(cfg).hexdigest()
    for m in layers:
        push_blob(repo, m["digest"], path=m["path"])
    push_blob(repo, cfg_digest, data=cfg)
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                   "size": len(cfg), "digest": cfg_digest},
        "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                    "size": m["size"], "digest": m["digest"]} for m in layers],
    }, sort_keys=True).encode()
    status, headers, body = registry_request(
        "PUT", "/v2/%s/manifests/%s" % (repo, tag), body=manifest,
        headers={"Content-Type": "application/vnd.docker.distribution.manifest.v2+json"})
    if status != 201:
        raise LabError("registry refused manifest %s:%s: HTTP %d %s" % (repo, tag, status, body[:300]))
    ref = "%s/%s:%s" % (REGISTRY, repo, tag)
    PUSHED[ref] = headers.get("Docker-Content-Digest")
    return ref, PUSHED[ref]


def build_images():
    os.makedirs(CACHE, exist_ok=True)
    t0 = time.time()
    base = layer_base()
    ray = layer_ray()
    labels = {"org.opencontainers.image.title": "sparkops lab engine base (python3 + Ray, no GPU engine)",
              "sparkops.lab": "true", "sparkops.ray.version": RAY_VERSION}
    ref, digest = push_image(ENGINE_IMAGE, "ray-" + RAY_VERSION, [base, ray], labels)
    # the same Debian root without Ray: a candidate that cannot run a Ray cluster
    no_ray, dummy = push_image(BASE_IMAGE, DEBIAN_SUITE, [base], {
        "org.opencontainers.image.title": "sparkops lab base (python3, no Ray, no engine)",
        "sparkops.lab": "true"})
    # and with torch (CPU): what the fabric preflight runs its gloo all-reduce in
    torch_layer = layer_torch()
    with_torch, dummy = push_image(ENGINE_IMAGE, "ray-%s-torch-%s" % (RAY_VERSION, TORCH_VERSION),
                                   [base, ray, torch_layer], dict(labels, **{
                                       "org.opencontainers.image.title":
                                           "sparkops lab engine (python3 + Ray + torch CPU, no GPU engine)",
                                       "sparkops.torch.version": TORCH_VERSION}))
    images = {"engine_base": ref, "no_ray": no_ray, "engine_torch": with_torch}
    serve = layer_model_server()
    ngc = layer_files("ngc-entrypoint", {NGC_ENTRYPOINT: (NGC_WRAPPER, 0o755)})
    for image, engine, version, how, with_ray, platform_, style in ENGINE_RELEASES:
        repo, tag = image.split(":")
        layers = ([base] + ([ray] if with_ray else []) + [layer_engine(engine, version, how), serve]
                  + ([ngc] if style == "ngc" else []))
        images[image] = push_image(repo, tag, layers, {
            "org.opencontainers.image.title": "sparkops lab %s %s (real release source tree, "
                                              "installed %s; cannot run it: no GPU)" % (engine, version, how),
            "sparkops.lab": "true"}, platform_=platform_, style=style)[0]
    # an image without Python (one small layer): what a probe meets in a non-engine image
    images["no_python"] = push_image("sparkops/lab-nopython", "1", [layer_files("nopython", {
        "/etc/os-release": ("NAME=\"sparkops lab image without python\"\n", 0o644)})],
        {"sparkops.lab": "true"})[0]
    images["crafted_links"] = push_image("sparkops/lab-crafted-links", "1", [base, layer_crafted_links()], {
        "org.opencontainers.image.title": "sparkops lab test image: SGLang model files that are links to host "
                                          "paths, above the image's root, at /etc/shadow, and a loop",
        "sparkops.lab": "true"})[0]
    log("%d images ready in %.1f s (%s ...)" % (len(images), time.time() - t0, ref))
    return images


# --------------------------------------------------------------------------- hosts

def ensure_keys():
    os.makedirs(SSH_DIR, mode=0o700, exist_ok=True)
    if not os.path.exists(KEY):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "sparkops-lab", "-f", KEY])


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def prepare_host(i, total, docker26=False):
    """The host's files; docker26: it runs the current Docker (containerd image store)."""
    name = host_name(i)
    hdir = host_dir(name)
    sdir = os.path.join(hdir, "ssh")
    os.makedirs(sdir, exist_ok=True)
    hostkey = os.path.join(sdir, "ssh_host_ed25519_key")
    if not os.path.exists(hostkey):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", hostkey])
    write(os.path.join(sdir, "sshd_config"), "\n".join([
        "# sshd of simulated Spark %s (lab)" % name,
        "ListenAddress %s" % mgmt_ip(i),
        "ListenAddress %s" % fabric_ip(i),
        "HostKey %s" % hostkey,
        "PidFile none",
        "UsePAM no",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "AuthorizedKeysFile %s.pub" % KEY,
        "StrictModes no",
        "MaxSessions 64",
        "MaxStartups 64:30:128",
        "AcceptEnv LANG LC_*",
        "Subsystem sftp /usr/lib/openssh/sftp-server",
        ""]))
    upper = os.path.join(hdir, "upper")
    hosts = ["127.0.0.1 localhost", "%s %s" % (REGISTRY_IP, "lab-registry")]
    for j in range(1, total + 1):
        hosts.append("%s %s" % (mgmt_ip(j), host_name(j)))
        hosts.append("%s %s-fabric" % (fabric_ip(j), host_name(j)))
    write(os.path.join(upper, "etc/hosts"), "\n".join(hosts) + "\n")
    write(os.path.join(upper, "etc/hostname"), name + "\n")
    daemon = {
        "insecure-registries": [REGISTRY, AUTH_REGISTRY],
        "runtimes": {"nvidia": {"path": "runc"}},
        "storage-driver": "overlay2",
        "iptables": False,
        "log-driver": "json-file",
        "log-opts": {"max-size": "10m", "max-file": "2"},
    }
    marker = os.path.join(hdir, "docker-bin")
    if docker26:
        del daemon["storage-driver"]  # the containerd image store's snapshotter instead
        daemon["features"] = {"containerd-snapshotter": True}
        write(marker, "%s %s\n" % (ensure_docker26(), DOCKER26_MIN_API))
    elif os.path.exists(marker):
        os.unlink(marker)
    write(os.path.join(upper, "etc/docker/daemon.json"), json.dumps(daemon, indent=2) + "\n")
    for tool in ("nvidia-smi", "nvidia-container-runtime-hook"):
        dst = os.path.join(upper, "usr/local/bin", tool)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        install_standin(tool, dst)
    write_model(os.path.join(upper, MODEL_DIR.lstrip("/")))
    write(os.path.join(upper, "etc/sparkops-lab-standin"),
          "This host is a simulated DGX Spark of the sparkops lab: no GPU, no RDMA.\n"
          "/usr/local/bin/nvidia-smi and nvidia-container-runtime-hook are stand-ins.\n")


# The model every simulated Spark holds (the same files on each): the real config.json
# shape of Qwen3.5-122B-A10B (architectures, model_type), with a 4 MiB stand-in for the
# weights - the lab's stand-in server (lab/standins/model_server.py) does not read them.
MODEL_DIR = "/opt/models/lab-qwen3.5-tiny"
MODEL_CONFIG = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
                "torch_dtype": "bfloat16", "max_position_embeddings": 8192,
                "_sparkops_lab": "STAND-IN model directory: weights are zeros"}


def write_model(path):
    if os.path.exists(os.path.join(path, "config.json")):
        return
    write(os.path.join(path, "config.json"), json.dumps(MODEL_CONFIG, indent=2) + "\n")
    write(os.path.join(path, "generation_config.json"), json.dumps({"max_new_tokens": 16}) + "\n")
    with open(os.path.join(path, "model-00001-of-00001.safetensors"), "wb") as f:
        f.write(b"\0" * (4 << 20))


def install_standin(tool, dst):
    """Copy a stand-in onto a host. The Python ones are kept without a shebang in the
    repository (they are not meant to run on the controller) and get one here."""
    src = os.path.join(HERE, "standins", tool)
    if os.path.exists(src + ".py"):
        with open(src + ".py") as f:
            text = "#!/usr/bin/python3\n" + f.read()
    else:
        with open(src) as f:
            text = f.read()
    write(dst, text, 0o755)


def start_host(i, state):
    name = host_name(i)
    hdir = host_dir(name)
    plumb(name, str(i), [(MGMT_IFACE, MGMT_BRIDGE, mgmt_ip(i) + "/24", 1500),
                         (FABRIC_IFACE, FABRIC_BRIDGE, fabric_ip(i) + "/24", FABRIC_MTU)])
    console = open(os.path.join(hdir, "console.log"), "ab")
    proc = subprocess.Popen(
        ["nsenter", "--net=/run/netns/" + name, "unshare", "--mount", "--uts", "--pid", "--fork",
         "--kill-child", "--mount-proc", "--propagation", "private",
         os.path.join(HERE, "host-init.sh"), name, hdir],
        stdout=console, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True)
    state["hosts"][name] = {"index": i, "pid": proc.pid, "mgmt": mgmt_ip(i), "fabric": fabric_ip(i),
                            "dir": hdir, "docker26": os.path.exists(os.path.join(hdir, "docker-bin"))}
    save_state(state)


def port_open(ip, port):
    try:
        with socket.create_connection((ip, port), timeout=0.5):
            return True
    except OSError:
        return False


def docker_ready(name):
    sock = os.path.join(host_dir(name), "docker.sock")
    if not os.path.exists(sock):
        return False
    return run(["docker", "-H", "unix://" + sock, "version", "--format", "{{.Server.Version}}"],
               check=False).returncode == 0


def wait_hosts(names, state, timeout=60):
    deadline = time.time() + timeout
    pending = set(names)
    while pending:
        for name in sorted(pending):
            h = state["hosts"][name]
            if not pid_alive(h["pid"]) and not alive_after_all(h["pid"]):
                raise LabError("simulated host %s died while starting; its console:\n%s"
                               % (name, tail(os.path.join(h["dir"], "console.log"))))
            if port_open(h["mgmt"], 22) and docker_ready(name):
                pending.discard(name)
        if pending and time.time() > deadline:
            raise LabError("hosts %s did not get sshd and dockerd up within %d s; see %s"
                           % (", ".join(sorted(pending)), timeout,
                              ", ".join(os.path.join(host_dir(n), "upper/var/log/dockerd.log")
                                        for n in sorted(pending))))
        if pending:
            time.sleep(0.2)


def tail(path, n=20):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no %s)" % path


def write_known_hosts(state):
    lines = []
    for name, h in sorted(state["hosts"].items()):
        with open(os.path.join(h["dir"], "ssh/ssh_host_ed25519_key.pub")) as f:
            key = " ".join(f.read().split()[:2])
        lines.append("%s,%s,%s %s" % (h["mgmt"], h["fabric"], name, key))
    write(KNOWN_HOSTS, "\n".join(lines) + "\n", 0o600)


def write_inventory(state):
    """An inventory (a directory) for however many hosts run now; inventories/lab holds the
    two-host one."""
    names = sorted(state["hosts"], key=lambda n: state["hosts"][n]["index"])
    head, workers = names[0], names[1:]
    out = ["# written by lab/lab up: the simulated Sparks running now", "llm_cluster:",
           "  children:", "    llm_head:", "      hosts:",
           "        %s: {ansible_host: %s, fabric_address: %s}" % (
               head, state["hosts"][head]["mgmt"], state["hosts"][head]["fabric"]),
           "    llm_workers:", "      hosts:" + ("" if workers else " {}")]
    for n in workers:
        out.append("        %s: {ansible_host: %s, fabric_address: %s}" % (
            n, state["hosts"][n]["mgmt"], state["hosts"][n]["fabric"]))
    inv = os.path.join(STATE, "inventory")
    write(os.path.join(inv, "hosts.yml"), "\n".join(out) + "\n")
    # the lab's settings (connection, stand-in workarounds) come with it
    link = os.path.join(inv, "group_vars")
    target = os.path.join(os.path.dirname(HERE), "inventories", "lab", "group_vars")
    if os.path.islink(link) and os.readlink(link) != target:
        os.unlink(link)
    if not os.path.islink(link):
        os.symlink(target, link)


def refresh_images(names, state):
    """A lab image rebuilt under the same tag (a changed stand-in, a new recipe) is pulled again
    on every host that holds the old one: a host keeps what it pulled, and hosts holding different
    images under one name are what the deploy refuses ("the tag moved between pulls")."""
    digests = state.get("image_digests") or {}
    if not digests:
        return

    def refresh(name):
        sock = "unix://" + os.path.join(state["hosts"][name]["dir"], "docker.sock")
        res = run(["docker", "-H", sock, "images", "--digests", "--format", "{{.Repository}}:{{.Tag}} {{.Digest}}"],
                  check=False)
        stale = sorted(set(ref for ref, digest in (l.split(" ", 1) for l in res.stdout.splitlines() if " " in l)
                           if ref in digests and digests[ref] and digest.startswith("sha256:")
                           and digest != digests[ref]))
        for ref in stale:
            run(["docker", "-H", sock, "pull", "-q", ref], check=False)
        if stale:
            log("%s: pulled again %d lab image(s) rebuilt since it pulled them (%s)" % (name, len(stale), ", ".join(stale)))

    threads = [threading.Thread(target=refresh, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def reset_hosts(names, state):
    """Every container removed, the collection's files (/etc/sparkops, /var/lib/sparkops) and the
    lab's faults gone; the image store kept."""
    for name in names:
        h = state["hosts"][name]
        sock = "unix://" + os.path.join(h["dir"], "docker.sock")
        ids = run(["docker", "-H", sock, "ps", "-aq"]).stdout.split()
        if ids:
            run(["docker", "-H", sock, "rm", "-f"] + ids)
        run(["ssh", "-i", KEY, "-o", "BatchMode=yes", "-o", "UserKnownHostsFile=" + KNOWN_HOSTS,
             "root@" + h["mgmt"], "rm -rf /etc/sparkops /etc/sparkops-lab /var/lib/sparkops/*"])
        log("%s: reset (%d containers removed, images kept)" % (name, len(ids)))


def stop_host(name, h):
    """Power the simulated host off: unshare ignores SIGTERM while it waits for its child, so
    it gets SIGKILL, and --kill-child takes the host's PID 1 and everything under it along."""
    pid = h.get("pid")
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
        for dummy in range(200):
            if not pid_alive(pid):
                break
            time.sleep(0.025)
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    unplumb(name)


# --------------------------------------------------------------------------- commands

def cmd_up(args):
    t0 = time.time()
    if not 1 <= args.hosts <= MAX_HOSTS:
        raise LabError("--hosts must be between 1 and %d; got %d" % (MAX_HOSTS, args.hosts))
    check_machine()
    ensure_packages()
    state = load_state()
    wanted = [host_name(i) for i in range(1, args.hosts + 1)]
    docker26 = set(n for n in (args.docker26 or "").split(",") if n)
    if docker26 - set(wanted):
        raise LabError("--docker26 names %s, which are not among the hosts (%s)"
                       % (", ".join(sorted(docker26 - set(wanted))), ", ".join(wanted)))
    # a host whose Docker changes starts afresh: the two image stores do not share a disk
    for name in sorted(set(state["hosts"]) & set(wanted)):
        if bool(state["hosts"][name].get("docker26")) != (name in docker26):
            log("restarting %s with %s" % (name, "the current Docker (containerd store)" if name in docker26
                                           else "Docker 20.10"))
            stop_host(name, state["hosts"].pop(name))
            for d in ("docker", "containerd"):
                shutil.rmtree(os.path.join(host_dir(name), d), ignore_errors=True)
    stopped = sorted(set(state["hosts"]) - set(wanted))
    for name in stopped:
        log("stopping %s (not in --hosts %d)" % (name, args.hosts))
        stop_host(name, state["hosts"].pop(name))
    if args.fresh:
        for name in list(state["hosts"]):
            stop_host(name, state["hosts"].pop(name))
        for name in wanted:
            if os.path.isdir(host_dir(name)):
                shutil.rmtree(host_dir(name))
    save_state(state)
    ensure_keys()
    ensure_bridges()
    ensure_registry(state)
    ensure_auth_registry(state)
    started = []
    for i, name in enumerate(wanted, 1):
        prepare_host(i, args.hosts, name in docker26)
        h = state["hosts"].get(name)
        if h and pid_alive(h["pid"]) and netns_exists(name):
            continue
        start_host(i, state)
        started.append(name)
    if not args.no_images:
        images = build_images()
        state["images"] = images
        state["image_digests"] = dict(PUSHED)
    write_known_hosts(state)
    write_inventory(state)
    save_state(state)
    wait_hosts(wanted, state)
    refresh_images(wanted, state)
    if args.reset:
        reset_hosts(wanted, state)
    log("up: %d hosts (%s), registry %s, %.1f s%s" % (
        len(wanted), ", ".join(wanted), REGISTRY, time.time() - t0,
        "" if started or stopped else " (all were already up)"))
    return 0


def cmd_reboot(args):
    """Power the hosts off and on: every process and container gone (tmpfs /run and /tmp too),
    the disks kept, then dockerd and sshd start again as at boot - dockerd brings back the
    containers whose restart policy says so, as on a real host."""
    t0 = time.time()
    state = load_state()
    unknown = [n for n in args.hosts if n not in state["hosts"]]
    if unknown:
        raise LabError("no simulated host %s is up (up now: %s)"
                       % (", ".join(unknown), ", ".join(sorted(state["hosts"])) or "none"))
    for name in args.hosts:
        h = state["hosts"][name]
        stop_host(name, h)
        log("%s: powered off" % name)
    if args.off_for:
        time.sleep(args.off_for)
    for name in args.hosts:
        start_host(state["hosts"][name]["index"], state)
    for attempt in range(1, 4):
        try:
            wait_hosts(args.hosts, state)
            break
        except LabError as exc:
            # the old host's mounts can outlive its PID 1 by a moment (its processes are still
            # being reaped), and the new one's first mount then fails: power it on again
            dead = [n for n in args.hosts if not pid_alive(state["hosts"][n]["pid"])]
            if attempt == 3 or not dead:
                raise
            log("%s did not come up (%s): powering on again" % (", ".join(dead), str(exc).splitlines()[0]))
            time.sleep(2)
            for name in dead:
                stop_host(name, state["hosts"][name])
                start_host(state["hosts"][name]["index"], state)
    log("rebooted %s in %.1f s (disks kept; sshd and dockerd up)" % (", ".join(args.hosts), time.time() - t0))
    return 0


def cmd_small_disk(args):
    """A lab fault: the host's Docker stores on a small empty tmpfs of MIB MiB (0: its own disk
    again, images as they were); the host reboots to take it."""
    state = load_state()
    if args.host not in state["hosts"]:
        raise LabError("no simulated host %s is up (up now: %s)" % (args.host, ", ".join(sorted(state["hosts"])) or "none"))
    flag = os.path.join(host_dir(args.host), "small-disk-mib")
    if args.mib > 0:
        write(flag, "%d\n" % args.mib)
    elif os.path.exists(flag):
        os.unlink(flag)
    args.hosts, args.off_for = [args.host], 0
    return cmd_reboot(args)


def cmd_down(args):
    if os.geteuid() != 0:
        raise LabError("the lab needs root to take down namespaces and bridges; found uid %d"
                       % os.geteuid())
    state = load_state()
    for name, h in sorted(state["hosts"].items()):
        stop_host(name, h)
    # namespaces of hosts a lost state file forgot about
    if os.path.isdir("/run/netns"):
        for ns in os.listdir("/run/netns"):
            if ns.startswith("spark") and ns[5:].isdigit():
                unplumb(ns)
    stop_registries(set([state.get("registry_pid"), state.get("auth_registry_pid")] + lab_registries()))
    unplumb(REGISTRY_NS)
    remove_host_links()
    remove_bridges()
    save_state({"hosts": {}, "registry_pid": None, "auth_registry_pid": None})
    if args.purge:
        shutil.rmtree(os.path.join(STATE, "hosts"), ignore_errors=True)
    log("down: no lab namespace, bridge, iptables chain or process is left"
        + (" (host disks purged)" if args.purge else " (host disks kept; --purge drops them)"))
    return 0


def lab_status():
    state = load_state()
    hosts = []
    for name, h in sorted(state["hosts"].items(), key=lambda kv: kv[1]["index"]):
        hosts.append({"name": name, "mgmt": h["mgmt"], "fabric": h["fabric"],
                      "running": pid_alive(h["pid"]) and netns_exists(name),
                      "sshd": port_open(h["mgmt"], 22), "docker": docker_ready(name)})
    return {"hosts": hosts, "registry": REGISTRY,
            "registry_up": pid_alive(state.get("registry_pid")) and registry_ready(0),
            "images": state.get("images", {}), "inventory": os.path.join(STATE, "inventory"),
            "ssh_key": KEY}


def cmd_status(args):
    st = lab_status()
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    row = "%-8s %-12s %-15s %-8s %-5s %-6s"
    print(row % ("host", "management", "fabric", "running", "sshd", "docker"))
    for h in st["hosts"]:
        print(row % (h["name"], h["mgmt"], h["fabric"], h["running"], h["sshd"], h["docker"]))
    if not st["hosts"]:
        print("(no simulated hosts)")
    print("registry %s: %s" % (st["registry"], "up" if st["registry_up"] else "down"))
    for k, v in st["images"].items():
        print("image %s: %s" % (k, v))
    return 0 if st["hosts"] and all(h["sshd"] and h["docker"] for h in st["hosts"]) else 3


def cmd_images(args):
    check_machine()
    ensure_packages()
    state = load_state()
    ensure_bridges()
    ensure_registry(state)
    state["images"] = build_images()
    save_state(state)
    return 0


# "The old model" of the story, on every simulated host: a vLLM-like container holding
# real host memory and (as the nvidia-smi stand-in counts it) GPU memory, and a container of
# an "embeddings" compose project. The second has no init, so it ignores SIGTERM (PID 1 in a
# container): stopping it takes the grace period and then SIGKILL, as with many real servers.
OLD_MODEL = [
    # "always", as many hand-run services are: dockerd starts it at boot even after `docker stop`
    ("old-vllm", ["--init", "--restart", "always", "-e", "SPARKOPS_LAB_GPU_MIB=40960"], 1024),
    ("embeddings-embed-1", ["-e", "SPARKOPS_LAB_GPU_MIB=2048", "--label",
                            "com.docker.compose.project=embeddings", "--label",
                            "com.docker.compose.service=embed"], 256),
]


def cmd_old_model(args):
    state = load_state()
    if not state["hosts"]:
        raise LabError("the lab is not up: lab/lab up first")
    image = "%s/%s:%s" % (REGISTRY, BASE_IMAGE, DEBIAN_SUITE)
    for name, h in sorted(state["hosts"].items()):
        sock = "unix://" + os.path.join(h["dir"], "docker.sock")
        for cname, opts, mib in OLD_MODEL:
            res = run(["docker", "-H", sock, "inspect", "-f", "{{.State.Running}}", cname], check=False)
            if res.returncode == 0 and res.stdout.strip() == "true":
                continue
            if res.returncode == 0:
                if "--restart" in opts:  # a deploy holds it at "no" while it is stopped
                    run(["docker", "-H", sock, "update", "--restart", opts[opts.index("--restart") + 1], cname])
                run(["docker", "-H", sock, "start", cname])
                continue
            # resident at once (MAP_POPULATE faults the pages in one call: ~40 % less CPU than filling them);
            # it ends on SIGTERM as the servings it stands for do (vLLM, an embeddings server): as PID 1
            # without a handler it ignored it, and every deploy waited gpu_memory_stop_timeout for
            # docker stop's SIGKILL
            hold = ("import mmap, signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); "
                    "held = mmap.mmap(-1, %d << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS"
                    " | mmap.MAP_POPULATE); time.sleep(10 ** 9)" % mib)
            run(["docker", "-H", sock, "run", "-d", "--name", cname] + opts
                + [image, "python3", "-c", hold])
        log("%s: old model running (old-vllm, embeddings-embed-1)" % name)
    return 0


def cmd_deps(args):
    if os.geteuid() != 0:
        raise LabError("installing packages needs root; found uid %d" % os.geteuid())
    ensure_packages()
    ensure_promtool()
    # fetched here, on this machine's network, not when a test first asks for a --docker26 host:
    # the suite's second lane runs in a network namespace of its own (lab/isolated.sh) that
    # reaches no mirror - a fresh machine's test_28 failed there on an empty package list
    ensure_docker26()
    return 0


def cmd_ssh(args):
    state = load_state()
    h = state["hosts"].get(args.host)
    if not h:
        running = ", ".join(state["hosts"]) or "none (lab/lab up)"
        raise LabError("no simulated host %r; running: %s" % (args.host, running))
    os.execvp("ssh", ["ssh", "-i", KEY, "-o", "UserKnownHostsFile=" + KNOWN_HOSTS,
                      "root@" + h["mgmt"]] + args.command)


def main(argv=None):
    p = argparse.ArgumentParser(prog="lab/lab", description=__doc__.split("\n", maxsplit=1)[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="bring the lab up (idempotent)")
    up.add_argument("--hosts", type=int, default=int(os.environ.get("SPARKOPS_LAB_HOSTS", "2")))
    up.add_argument("--fresh", action="store_true", help="wipe the hosts' disks first")
    up.add_argument("--no-images", action="store_true", help="skip building/pushing images")
    up.add_argument("--reset", action="store_true",
                    help="remove every container and the collection's state on the hosts, keep their images "
                         "(as --fresh, without pulling every image again)")
    up.add_argument("--docker26", metavar="HOSTS", default="",
                    help="comma-separated hosts that run a current Docker (containerd store, API >= 1.44)")
    down = sub.add_parser("down", help="take the lab down")
    down.add_argument("--purge", action="store_true", help="also delete the hosts' disks")
    st = sub.add_parser("status", help="what runs")
    st.add_argument("--json", action="store_true")
    sub.add_parser("images", help="build and push the lab images")
    sub.add_parser("deps", help="install the Debian packages the lab needs")
    sub.add_parser("old-model", help='start "the old model" on every host')
    rb = sub.add_parser("reboot", help="power hosts off and on (processes and containers gone, disks kept)")
    rb.add_argument("hosts", nargs="+", metavar="HOST")
    rb.add_argument("--off-for", type=float, default=0, metavar="SECONDS", help="stay off this long first")
    sd = sub.add_parser("small-disk", help="a fault: the host's Docker stores on a small empty disk (0: its own)")
    sd.add_argument("host")
    sd.add_argument("mib", type=int)
    ssh = sub.add_parser("ssh", help="ssh to a simulated Spark")
    ssh.add_argument("host")
    ssh.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    try:
        return {"up": cmd_up, "down": cmd_down, "status": cmd_status, "images": cmd_images,
                "deps": cmd_deps, "ssh": cmd_ssh, "old-model": cmd_old_model,
                "reboot": cmd_reboot, "small-disk": cmd_small_disk}[args.cmd](args)
    except LabError as exc:
        print("lab: error: %s" % exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
