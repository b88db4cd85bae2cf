"""engine_image on the lab: real pulls from the lab registry, real probes of images that carry
real vLLM / SGLang release trees; every bad input stops the deploy before anything is stopped."""
import hashlib
import json
import re
import socket
import subprocess
import threading
import time

import pytest

from conftest import BIN, LAB, playbook, run, ssh

HOSTS = ("10.77.0.11", "10.77.0.12")
REG = "10.77.0.5:5000/sparkops/"
# the lab registry's storage again, behind htpasswd (lab/sparklab.py AUTH_*)
AUTH_REG, AUTH_USER, AUTH_PASSWORD = "10.77.0.5:5001", "sparkops-lab", "lab-registry-canary-7f3a"
QWEN35 = "Qwen3_5MoeForConditionalGeneration"


def flat(text):
    return " ".join(text.split())


def running(ip):
    return set(ssh(ip, "docker ps --format '{{.Names}}'").out.split())


@pytest.fixture
def old_model(lab):
    res = run(LAB + ["old-model"])
    assert res.returncode == 0, res.out
    return res


def deploy(*extra):
    return playbook("deploy.yml", "-i", "inventories/lab", *extra)


def probe_play(*extra):
    return playbook("playbooks/probe.yml", "-i", "inventories/lab", *extra)


def test_probe_playbook_selects_vllm_017_and_explains_the_rest(lab):
    res = probe_play()
    assert res.returncode == 0, res.out[-3000:]
    out = flat(res.out)
    assert "%slab-vllm:0.17.0 selected vllm 0.17.0" % REG in out
    assert "vllm 0.14.0 lacks %s (only its generic Transformers backend: fallback)" % QWEN35 in out
    assert "sglang 0.5.4 lacks %s" % QWEN35 in out
    assert "built for linux/arm64/v8, spark1 is linux/amd64" in out  # the variant as Docker reports it
    # SGLang 0.5.10 has the model and no Ray: it would be launched natively (its own --nnodes ...)
    assert re.search(r"%slab-sglang:0\.5\.10 fits sglang 0\.5\.10 ray - launch native " % re.escape(REG), out), out
    assert "%slab-vllm:0.17.0 selected vllm 0.17.0 ray 2.60.0 launch ray " % REG in out


def test_each_phase_has_a_tag_and_one_runs_alone(old_model):
    """--list-tags names the phases; --tags engine_image runs preflight, the lock and the image
    phase only: the candidates are pulled, probed and one selected, nothing is stopped."""
    listed = deploy("--list-tags")
    assert listed.returncode == 0, listed.out
    tags = re.findall(r"TASK TAGS: \[([^\]]*)\]", listed.out)[-1].split(", ")
    assert set(tags) >= {"preflight", "engine_image", "gpu_memory", "fabric", "ray_cluster", "model_server", "report"}
    res = deploy("--tags", "engine_image")
    assert res.returncode == 0, res.out[-3000:]
    out = flat(res.out)
    assert "%slab-vllm:0.17.0 selected vllm 0.17.0" % REG in out
    for skipped in ("gpu_memory", "fabric", "ray_cluster", "model_server", "report"):
        assert not re.search(r"TASK \[sparkops\.inference\.%s : (?!Validating arguments)" % skipped, res.out), skipped
    for ip in ("10.77.0.11", "10.77.0.12"):
        assert {"old-vllm", "embeddings-embed-1"} <= running(ip)  # nothing stopped


def test_probe_module_static_runtime_cached(lab):
    """One image three ways on a host; the static read follows SGLang's editable install; engine_pull
    probes what a host holds in the same call."""
    def probe(image, method, cache="/var/lib/sparkops/engine-probe-cache.json", reader="auto"):
        res = run([BIN + "/ansible", "-i", "inventories/lab", "spark1", "-m",
                   "sparkops.inference.engine_probe", "-a",
                   json.dumps({"image": REG + image, "architectures": [QWEN35, "LlamaForCausalLM"],
                               "method": method, "cache_file": cache, "static_reader": reader})],
                  env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"})
        data = json.loads(res.out[res.out.index("{"):])
        return data["plays"][0]["tasks"][0]["hosts"]["spark1"]
    ssh(HOSTS[0], "docker pull -q %slab-sglang:0.5.10 >/dev/null; rm -f /tmp/probe-cache.json" % REG)
    first = probe("lab-sglang:0.5.10", "static", "/tmp/probe-cache.json")
    assert first["engine"] == "sglang" and first["editable"] is True
    assert first["engine_path"] == "/sgl-workspace/sglang/python/sglang"
    assert first["architectures"] == {QWEN35: "native", "LlamaForCausalLM": "native"}
    assert first["cached"] is False and first["versions"]["engine"] == "0.5.10"
    again = probe("lab-sglang:0.5.10", "static", "/tmp/probe-cache.json")
    assert again["cached"] is True and again["architectures"] == first["architectures"]
    # other storage drivers: the export stream of a created container, read as it arrives
    exported = probe("lab-sglang:0.5.10", "static", "", reader="export")
    for key in ("engine", "editable", "engine_path", "versions", "architectures", "native_count"):
        assert exported[key] == first[key], key
    assert "sparkops-probe" not in ssh(HOSTS[0], "docker ps -a --format '{{.Names}}'").out
    # the runtime probe runs python in the image: the lab image has no torch, so SGLang's
    # registry does not import, and the probe says so instead of guessing
    rt = probe("lab-sglang:0.5.10", "runtime", "")
    assert rt["method"] == "runtime" and rt["supported"] is False
    assert any("torch" in e for e in rt["errors"]), rt["errors"]
    # engine_pull policy never: what the host holds, probed in the same call (the engine_image
    # phase's first look); an image the registry has but the host does not is neither pulled nor probed
    ssh(HOSTS[0], "docker image rm -f %slab-nopython:1 >/dev/null 2>&1; true" % REG)
    res = run([BIN + "/ansible", "-i", "inventories/lab", "spark1", "-m", "sparkops.inference.engine_pull", "-a",
               json.dumps({"images": [REG + "lab-sglang:0.5.10", REG + "lab-nopython:1"], "policy": "never",
                           "probe": {"architectures": [QWEN35], "method": "static",
                                     "cache_file": "/tmp/probe-cache.json"}})],
              env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"})
    held = json.loads(res.out[res.out.index("{"):])["plays"][0]["tasks"][0]["hosts"]["spark1"]
    assert held["changed"] is False and held["failed_images"] == {}, held
    assert [(e["image"], e["id"] is not None, e["pulled"], e["error"]) for e in held["images"]] == [
        (REG + "lab-sglang:0.5.10", True, False, None), (REG + "lab-nopython:1", False, False, None)]
    assert [(p["image"], p["engine"], p["cached"], p["architectures"]) for p in held["probes"]] == [
        (REG + "lab-sglang:0.5.10", "sglang", True, {QWEN35: "native"})]
    assert ssh(HOSTS[0], "docker image inspect %slab-nopython:1" % REG).returncode != 0  # not pulled
    # an image without python, and one for another CPU
    ssh(HOSTS[0], "docker pull -q %slab-nopython:1 >/dev/null; docker pull -q %slab-vllm:0.17.0-arm64 >/dev/null" % (REG, REG))
    nopy = probe("lab-nopython:1", "runtime", "")
    assert "has no python3" in " ".join(nopy["errors"])
    arm = probe("lab-vllm:0.17.0-arm64", "runtime", "")
    assert "is built for linux/arm64/v8 and this host is linux/amd64" in flat(" ".join(arm["errors"]))


HOST_ONLY_MODEL = "/etc/sparkops-lab/host-only/qwen3_5.py"  # lab/sparklab.py: layer_crafted_links()


@pytest.mark.fault(
    fault='a crafted image whose model files are symbolic links at host files, above its root, in a loop',
    inject="lab-crafted-links:1 (SGLang layout): qwen3_5.py -> /etc/sparkops-lab/host-only/qwen3_5.py (the "
           "host has it, the image not), qwen3_5_climb.py -> ../ x12 then that path, shadow.py -> /etc/shadow, "
           "loop_a.py <-> loop_b.py",
    message="'symbolic links that point outside the image, read as absent: ...qwen3_5_climb.py -> ../..', "
            "'symbolic-link loops, read as absent: ...loop_a.py'",
    left="the host's files unread: the model the host-only file declares is not found (unsupported)")
def test_a_crafted_image_never_makes_the_static_probe_read_host_files(lab):
    canary = "host-only canary 5d1e"
    model = 'class %s:\n    """%s"""\n\n\nEntryClass = %s\n' % (QWEN35, canary, QWEN35)
    assert ssh(HOSTS[0], "mkdir -p %s && cat > %s <<'EOF'\n%sEOF\ndocker pull -q %slab-crafted-links:1 >/dev/null"
               % (HOST_ONLY_MODEL.rsplit("/", 1)[0], HOST_ONLY_MODEL, model, REG)).returncode == 0
    try:
        assert "EntryClass = Qwen3_5MoeForConditionalGeneration" in ssh(HOSTS[0], "cat " + HOST_ONLY_MODEL).out
        for reader in ("auto", "export"):  # the layers in place (overlay2), and the export stream
            res = run([BIN + "/ansible", "-i", "inventories/lab", "spark1", "-m", "sparkops.inference.engine_probe",
                       "-a", json.dumps({"image": REG + "lab-crafted-links:1", "method": "static", "cache_file": "",
                                         "static_reader": reader,
                                         "architectures": [QWEN35, "LlamaForCausalLM"]})],
                      env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"})
            assert canary not in res.out, reader
            found = json.loads(res.out[res.out.index("{"):])["plays"][0]["tasks"][0]["hosts"]["spark1"]
            assert found["engine"] == "sglang" and found["versions"]["engine"] == "0.5.10", (reader, found)
            # the image's own model file is read; the one only the host has is not
            assert found["architectures"] == {QWEN35: "unsupported", "LlamaForCausalLM": "native"}, (reader, found)
            errors = " | ".join(found["errors"])
            models = "/usr/local/lib/python3.11/dist-packages/sglang/srt/models/"
            assert "symbolic links that point outside the image, read as absent: %sqwen3_5_climb.py -> ../../" \
                % models in errors, (reader, errors)
            assert "symbolic-link loops, read as absent: %sloop_" % models in errors, (reader, errors)
    finally:
        ssh(HOSTS[0], "rm -rf %s" % HOST_ONLY_MODEL.rsplit("/", 1)[0])


@pytest.mark.fault(
    fault='no candidate image can serve the model',
    inject='sparkops_launcher ray; candidates: an engine too old for the architecture, one without Ray, one '
           'without an engine',
    message="'No candidate image can serve ... on spark1, spark2 (nothing was stopped)', each candidate's reason",
    left='the old services running on both hosts (nothing was stopped)')
def test_no_candidate_fits_stops_before_anything_is_stopped(old_model):
    res = deploy("-e", json.dumps({"sparkops_engine_candidates": [
        REG + "lab-vllm:0.14.0", REG + "lab-sglang:0.5.10", REG + "lab-engine:ray-2.60.0"],
        "sparkops_launcher": "ray"}))
    assert res.returncode != 0
    out = flat(res.out)
    assert "%slab-sglang:0.5.10 rejected sglang 0.5.10 ray - launch - " % REG in out
    assert "- sparkops_launcher is ray: no Ray in the image" in out
    assert "No candidate image can serve %s on spark1, spark2 (nothing was stopped)" % QWEN35 in out
    assert "no engine (no inference engine installed" in out
    assert "Nothing was rolled back: this run stopped no service." in out
    for ip in HOSTS:
        assert {"old-vllm", "embeddings-embed-1"} <= running(ip)


@pytest.mark.fault(
    fault='the GPU runtime is broken on one host',
    inject="spark2's NVIDIA hook fails as NVIDIA's does when the driver is not loaded",
    message="'docker run --gpus all ... failed: the NVIDIA kernel driver is not loaded' ... 'reboot the host'",
    left='exactly what ran before on both hosts (the old services; nothing stopped or started)')
def test_a_broken_gpu_runtime_is_named_before_anything_is_stopped(old_model):
    """spark2's NVIDIA hook fails as NVIDIA's does when the driver is not loaded (a lab fault of
    the stand-in hook): the deploy stops in engine_image, naming the host, the cause and the fix."""
    fault = "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown"
    before = [running(ip) for ip in HOSTS]
    ssh(HOSTS[1], "mkdir -p /etc/sparkops-lab && echo '%s' > /etc/sparkops-lab/gpu-fault" % fault)
    try:
        res = deploy()
    finally:
        ssh(HOSTS[1], "rm -f /etc/sparkops-lab/gpu-fault")
    assert res.returncode != 0
    out = flat(res.out)
    assert "fatal: [spark2]: FAILED!" in out
    assert 'The deploy failed at "Check that Docker gives the selected image the GPUs on every host ' \
           '(docker run --gpus all) on spark2: docker run --gpus all' in out
    assert "docker run --gpus all %slab-vllm:0.17.0 failed: the NVIDIA kernel driver is not loaded" % REG in out
    assert "reboot the host" in out and fault in out
    assert "Nothing was rolled back: this run stopped no service." in out
    for ip, was in zip(HOSTS, before):
        assert {"old-vllm", "embeddings-embed-1"} <= running(ip) == was  # nothing stopped or started


BAD_CANDIDATES = (
    (REG + "lab-vllm:no-such-tag", "the registry does not know %slab-vllm:no-such-tag" % REG),
    ("10.77.0.5:5000/x;touch /tmp/pwned", "is not a valid image reference"),
    ("10.77.0.99:5000/sparkops/lab-vllm:0.17.0",
     "the registry of 10.77.0.99:5000/sparkops/lab-vllm:0.17.0 is unreachable after 2 attempts"),
    # no login: the registry's 401 is named, not retried
    (AUTH_REG + "/sparkops/lab-vllm:0.17.0", "the registry refused %s/sparkops/lab-vllm:0.17.0" % AUTH_REG),
)


def test_bad_candidates_are_named(lab):
    """probe.yml: the pull, probe and selection of the engine_image phase, without the lock, the
    rescue and the report around it - what names a bad candidate is the phase's own. Each candidate
    fails for a reason of its own, all in one run: none of them stops the others being tried."""
    res = probe_play("-e", json.dumps({"sparkops_engine_candidates": [c for c, dummy in BAD_CANDIDATES],
                                       "engine_image_pull_retries": 1, "engine_image_pull_backoff": 0,
                                       "engine_image_pull_timeout": 5}))
    assert res.returncode != 0
    out = flat(res.out)
    for candidate, expected in BAD_CANDIDATES:
        assert expected in out, (candidate, out[-2500:])
    assert ssh(HOSTS[0], "test -e /tmp/pwned").returncode != 0  # an argv element, never a shell


def test_model_config_errors(lab, tmp_path):
    for content, expected in (
            (None, "/opt/models/none/config.json does not exist"),
            ("{not json", "is not JSON"),
            ('{"model_type": "qwen3_5_moe"}', 'has no "architectures" list')):
        path = "/opt/models/none" if content is None else "/opt/models/broken"
        if content is not None:
            ssh(HOSTS[0], "mkdir -p %s && printf '%%s' '%s' > %s/config.json" % (path, content, path))
        res = probe_play("-e", "sparkops_model_path=" + path)  # the phase's model check, as probe.yml runs it
        assert res.returncode != 0
        assert expected in flat(res.out), flat(res.out)[-2000:]
    ssh(HOSTS[0], "rm -rf /opt/models/broken")


def test_empty_candidate_list(lab):
    res = playbook("playbooks/probe.yml", "-i", "inventories/lab", "-e",
                   json.dumps({"sparkops_engine_candidates": [], "preflight_require_candidates": False}))
    assert res.returncode != 0
    assert "the candidate list is empty" in flat(res.out)


def test_pull_that_times_out_once_succeeds_on_retry(lab):
    """The registry is unreachable from spark2 for the first attempt (traffic dropped), then
    comes back: the pull is retried after the backoff and succeeds. The image is the lab's
    smallest (one 41-byte layer), so a retry's success does not hang on how fast this machine
    extracts layers (lab-vllm's take ~9 s here, more than an attempt's 4 s)."""
    image = REG + "lab-nopython:1"
    ssh(HOSTS[1], "docker rmi -f %s >/dev/null 2>&1; true" % image)
    rule = "OUTPUT -d 10.77.0.5 -p tcp --dport 5000 -j DROP"
    assert ssh(HOSTS[1], "iptables -I " + rule).returncode == 0
    # lift the block when attempt 1 has been stopped by its timeout: the lifter waits for the
    # first `docker pull` on spark2 to start, then to end, and removes the rule in the backoff
    # before attempt 2. (A fixed delay from here failed on a busy CI machine: ansible's own start
    # took longer, the block was gone before attempt 1 and the test saw one attempt.) Each wait is
    # bounded (120 s); the rule is removed below whatever happens.
    lifter = ('i=0; until pgrep -f "[d]ocker pull" >/dev/null || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done; '
              'i=0; while pgrep -f "[d]ocker pull" >/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; '
              'iptables -D %s' % rule)
    ssh(HOSTS[1], "nohup sh -c '%s' </dev/null >/dev/null 2>&1 &" % lifter)
    res = run([BIN + "/ansible", "-i", "inventories/lab", "spark2", "-m", "sparkops.inference.engine_pull",
               "-a", json.dumps({"images": [image], "timeout": 4, "retries": 2, "backoff": 3})])
    ssh(HOSTS[1], "iptables -D %s 2>/dev/null; true" % rule)
    out = flat(res.out)
    assert res.returncode == 0, out[-2000:]
    assert "attempt 1 timed out" in out and "attempt 2 succeeded" in out
    assert ssh(HOSTS[1], "docker image inspect %s >/dev/null && docker rmi %s >/dev/null" % (image, image)).returncode == 0


def test_a_long_pull_shows_progress_at_the_default_verbosity(lab):
    """spark2's link to the registry is throttled (tc on the lab side of its veth): while the
    torch image (~0.8 GB) comes in, a line every 2 s names the host, the image, the layers and
    the attempt; no -v needed."""
    image = REG + "lab-engine:ray-2.60.0-torch-2.13.0"
    ssh(HOSTS[1], "docker rmi -f %s >/dev/null 2>&1; true" % image)
    assert subprocess.run(["tc", "qdisc", "add", "dev", "spl2m", "root", "tbf", "rate", "600mbit",
                           "burst", "256kb", "latency", "500ms"], check=False).returncode == 0
    try:
        res = run([BIN + "/ansible", "-i", "inventories/lab", "spark2", "-m", "sparkops.inference.engine_pull",
                   "-a", json.dumps({"images": [image], "timeout": 300, "retries": 0, "progress_interval": 2})])
    finally:
        subprocess.run(["tc", "qdisc", "del", "dev", "spl2m", "root"], check=False)
    out = flat(res.out)
    assert res.returncode == 0, out[-2000:]
    lines = [l for l in res.out.splitlines() if l.startswith("spark2: pulling %s (1 of 1): " % image)]
    assert len(lines) >= 2, res.out[-2000:]
    assert all("; attempt 1 of 1, " in l and " s on this image" in l for l in lines)
    assert any("layers done (2 on the host already)" in l for l in lines), lines
    assert "attempt 1 succeeded in" in out and "3 of 3 layers done (2 on the host already)" in out
    assert ssh(HOSTS[1], "ls /tmp/.sparkops-pull-* 2>/dev/null").out.strip() == ""  # progress file gone


def bad_transfer_clients(answers, stop):
    """As soon as the head's image sender listens (192.168.77.11:29876), three clients that are
    not receivers: one that connects and says nothing, one that sends an HTTP request line, one
    that answers the challenge with a wrong proof. What each was answered goes into `answers`."""
    def talk(name, first=None, prove=False):
        try:
            conn = socket.create_connection(("192.168.77.11", 29876), timeout=30)
            data = b""
            if first is not None:
                conn.sendall(first)
            if prove:
                hello = conn.makefile("rb").readline()  # the challenge
                data += hello
                conn.sendall(b'{"cnonce": "%s", "mac": "%s", "skip": false}\n' % (b"0" * 64, b"f" * 64))
            while True:
                part = conn.recv(4096)
                if not part:
                    break
                data += part
            answers[name] = data.decode("utf-8", "replace")
        except OSError as exc:
            answers[name] = "error: %s" % exc
    while not stop.is_set():
        try:
            socket.create_connection(("192.168.77.11", 29876), timeout=1).close()
            break
        except OSError:
            time.sleep(0.02)
    threads = [threading.Thread(target=talk, args=("silent",)),
               threading.Thread(target=talk, args=("malformed", b"GET / HTTP/1.0\r\n\r\n")),
               threading.Thread(target=talk, args=("wrong proof", None, True))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)


@pytest.mark.fault(
    fault="clients that are not receivers reach the image sender during a transfer",
    inject="from the controller, while the head serves the image: a silent client, an HTTP request line, "
           "a wrong proof of the token",
    message="each answered 'refused: ...' (said nothing within 10 s / not JSON / did not prove it holds the "
            "transfer's token) and dropped",
    left="spark2 holds the head's image (same id), fetched over the fabric; nothing from the registry")
def test_distribute_over_the_fabric(lab):
    """The head pulls and probes; spark2 gets the selected image over the fabric, same id; the
    registry serves nothing to spark2; clients that are not receivers are refused meanwhile."""
    image = REG + "lab-vllm:0.17.0"
    for ip in HOSTS:
        ssh(ip, "docker rm -f sparkops-model-server sparkops-ray-head sparkops-ray-worker >/dev/null 2>&1; "
                "docker rmi -f %s >/dev/null 2>&1; true" % image)
    log = "/var/lib/sparkops-lab/registry.log"
    offset = len(open(log, "rb").read())
    answers, stop = {}, threading.Event()
    intruders = threading.Thread(target=bad_transfer_clients, args=(answers, stop))
    intruders.start()
    try:
        res = probe_play("-e", json.dumps({"sparkops_engine_candidates": [image], "engine_image_distribute": "fabric"}))
    finally:
        stop.set()
        intruders.join(90)
    assert res.returncode == 0, res.out[-3000:]
    assert set(answers) == {"silent", "malformed", "wrong proof"}, answers
    assert '"refused: said nothing within 10 s"' in answers["silent"], answers
    assert '"refused: sent a line that is not JSON"' in answers["malformed"], answers
    assert '"refused: did not prove it holds the transfer\'s token"' in answers["wrong proof"], answers
    with open(log, "rb") as f:
        f.seek(offset)
        fetched_by = set(line.split()[0] for line in f.read().decode().splitlines() if "/blobs/" in line)
    assert b"10.77.0.12" not in b" ".join(x.encode() for x in fetched_by), fetched_by
    ids = [ssh(ip, "docker image inspect -f '{{.Id}}' %s" % image).out.strip() for ip in HOSTS]
    assert ids[0].startswith("sha256:") and ids[0] == ids[1]
    # a second run transfers nothing (spark2 has the image with the head's id)
    res = probe_play("-e", json.dumps({"sparkops_engine_candidates": [image], "engine_image_distribute": "fabric"}))
    assert res.returncode == 0, res.out[-3000:]
    assert "changed=0" in [l for l in res.out.splitlines() if l.startswith("spark2")][-1]


def test_hosts_of_mixed_cpu_architectures_fail_the_selection(tmp_path):
    """The engine_select action in a real play: spark2 says it is arm64 (a plain host variable, as
    the facts host_prereqs sets would say it), spark1 amd64; the head alone pulls (fabric
    distribution), yet the whole cluster is checked."""
    (tmp_path / "hosts.yml").write_text(
        "all:\n  hosts:\n"
        "    spark1: {ansible_connection: local, sparkops_host: {architecture: amd64}}\n"
        "    spark2: {ansible_connection: local, sparkops_host: {architecture: arm64}}\n")
    (tmp_path / "play.yml").write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - sparkops.inference.engine_select:\n"
        "        candidates: [%slab-vllm:0.17.0]\n        hosts: [spark1]\n"
        "        cluster_hosts: \"{{ ansible_play_hosts }}\"\n      run_once: true\n" % REG)
    res = playbook(str(tmp_path / "play.yml"), "-i", str(tmp_path / "hosts.yml"))
    assert res.returncode != 0
    assert ("the cluster's hosts are of different CPU architectures: linux/amd64 (spark1); "
            "linux/arm64 (spark2).") in flat(res.out)


@pytest.mark.fault(
    fault="the disk fills up during a pull",
    inject="lab/lab small-disk spark2 48 (its Docker stores on an empty 48 MiB tmpfs), then a deploy "
           "past preflight's free-space floor (as a 20 GB image on 15 GB free is)",
    message="'pulling ... ran out of disk space (no space left on device in attempt 1 of 4; a full disk is not "
            "retried): Docker's data root "
            "/var/lib/docker has N MiB free, the image is X MiB compressed'",
    left="nothing stopped: spark1's old services running, both hosts' records of stopped services unchanged")
def test_a_full_disk_is_named_once_with_the_free_space_and_the_image_size(old_model):
    image = REG + "lab-vllm:0.17.0"
    records = "cat /var/lib/sparkops/gpu_memory_stopped.json 2>/dev/null; true"
    before = [ssh(ip, records).out for ip in HOSTS]
    assert run(LAB + ["small-disk", "spark2", "48"]).returncode == 0
    try:
        # preflight's free-space floor (5 GiB) would stop it first; a 20 GB image on a disk with
        # 15 GB free passes that floor and fills the disk during the pull - as this one does
        res = deploy("-e", json.dumps({"sparkops_engine_candidates": [image], "engine_image_pull_retries": 3,
                                       "engine_image_pull_backoff": 5, "preflight_min_free_disk_gib": 0}))
    finally:
        assert run(LAB + ["small-disk", "spark2", "0"]).returncode == 0
    assert res.returncode != 0
    out = flat(res.out)
    m = re.search(r"pulling %s ran out of disk space \(no space left on device in attempt 1 of 4; a full disk "
                  r"is not retried\): Docker's data "
                  r"root /var/lib/docker has (\d+) MiB free, the image is ([\d.]+) (MiB|GiB) compressed "
                  r"\(more once unpacked\)\. Free space there" % re.escape(image), out)
    assert m, out[-3000:]
    assert int(m.group(1)) < 48
    assert "No candidate image can serve" in out and "(nothing was stopped)" in out
    assert {"old-vllm", "embeddings-embed-1"} <= running(HOSTS[0])
    assert [ssh(ip, records).out for ip in HOSTS] == before  # nothing was stopped on either host


def login_play(password, *extra):
    return deploy("-vvv", "-e", json.dumps({
        "sparkops_engine_candidates": [AUTH_REG + "/sparkops/lab-vllm:0.17.0"],
        "engine_image_registry_username": AUTH_USER, "engine_image_registry_password": password}), *extra)


@pytest.mark.fault(
    fault="a private registry and a wrong password",
    inject="candidates from the lab's htpasswd registry (10.77.0.5:5001), a wrong engine_image_registry_password, -vvv",
    message="'the registry 10.77.0.5:5001 refused the login of sparkops-lab on spark1: wrong user name or "
            "password - check engine_image_registry_username and engine_image_registry_password'",
    left="the old services running on both hosts (nothing was stopped); the password in no line of the output")
def test_a_wrong_registry_password_is_named_and_never_printed(old_model):
    wrong = "wrong-canary-91c2"
    res = login_play(wrong)
    assert res.returncode != 0
    out = flat(res.out)
    for host in ("spark1", "spark2"):
        assert ("the registry %s refused the login of %s on %s: wrong user name or password - check "
                "engine_image_registry_username and engine_image_registry_password" % (AUTH_REG, AUTH_USER, host)) in out
    assert "Nothing was rolled back: this run stopped no service." in out
    assert wrong not in res.out
    for ip in HOSTS:
        assert {"old-vllm", "embeddings-embed-1"} <= running(ip)


def test_the_right_registry_password_pulls_and_is_never_printed(lab):
    try:
        res = playbook("playbooks/probe.yml", "-i", "inventories/lab", "-vvv", "-e", json.dumps({
            "sparkops_engine_candidates": [AUTH_REG + "/sparkops/lab-vllm:0.17.0"],
            "engine_image_registry_username": AUTH_USER, "engine_image_registry_password": AUTH_PASSWORD}))
        assert res.returncode == 0, flat(res.out)[-3000:]
        assert AUTH_PASSWORD not in res.out
        for ip in HOSTS:
            assert ssh(ip, "docker image inspect %s/sparkops/lab-vllm:0.17.0 >/dev/null" % AUTH_REG).returncode == 0
    finally:
        for ip in HOSTS:
            ssh(ip, "docker logout %s; docker rmi %s/sparkops/lab-vllm:0.17.0; true" % (AUTH_REG, AUTH_REG))


def test_model_checksums_hashed_on_the_host_are_sha256sum_s(lab):
    """model_info with checksum (model_server_verify_checksums) on a real host: its files hashed
    several at a time give the manifest of coreutils' sha256sum and stat, line for line."""
    model = "/opt/models/lab-qwen3.5-tiny"
    res = run([BIN + "/ansible", "-i", "inventories/lab", "spark1", "-m", "sparkops.inference.model_info",
               "-a", json.dumps({"path": model, "checksum": True})],
              env={"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"})
    assert res.returncode == 0, res.out[-2000:]
    got = list(json.loads(res.out[res.out.index("{"):])["plays"][0]["tasks"][0]["hosts"].values())[0]
    listing = ssh(HOSTS[0], "cd %s && for f in $(ls | sort); do printf '%%s\\t%%s\\t%%s\\n' $f $(stat -c %%s $f) "
                            "$(sha256sum < $f | cut -d' ' -f1); done" % model)
    lines = listing.out.strip().split("\n")
    assert len(lines) == got["files"] >= 3 and sum(int(line.split("\t")[1]) for line in lines) == got["size_bytes"]
    assert got["manifest"] == hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
