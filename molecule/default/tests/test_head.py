"""Checks that only make sense on the head (spark1)."""
import json
import os


testinfra_hosts = ["ansible://spark1"]


def test_ray_cluster_spans_both_hosts_with_their_gpus(host):
    snippet = ("import ray; ray.init(address='auto', logging_level='ERROR'); "
               "print(sorted((n['NodeManagerAddress'], n['Resources'].get('GPU')) for n in ray.nodes() if n['Alive']))")
    out = host.check_output('docker exec sparkops-ray-head python3 -c "%s"' % snippet)
    assert out.splitlines()[-1] == "[('192.168.77.11', 1.0), ('192.168.77.12', 1.0)]"


def test_the_model_is_served_across_both_nodes(host):
    """The lab's stand-in server (in the selected image) answers like an engine, after placing a
    rank on each node of the real Ray cluster."""
    assert host.check_output("curl -s -o /dev/null -w '%{http_code}' http://10.77.0.11:8000/health") == "200"
    models = json.loads(host.check_output("curl -s http://10.77.0.11:8000/v1/models"))
    assert [m["id"] for m in models["data"]] == ["qwen3.5-lab"]
    out = json.loads(host.check_output(
        "curl -s http://10.77.0.11:8000/v1/completions -H 'Content-Type: application/json' "
        "-d '{\"model\": \"qwen3.5-lab\", \"prompt\": \"hi\", \"max_tokens\": 4}'"))
    assert out["choices"][0]["text"] == "lab stand-in answer from 2 Ray actors on 192.168.77.11, 192.168.77.12"


def test_the_engine_listens_on_the_management_address_only(host):
    """model_server_host's default: the head's ansible_host, not every interface (0.0.0.0)."""
    loopback = host.run("curl -s -m 3 -o /dev/null http://127.0.0.1:8000/health")
    assert loopback.rc == 7, (loopback.rc, loopback.stdout, loopback.stderr)  # 7: connection refused
    fabric = host.run("curl -s -m 3 -o /dev/null http://192.168.77.11:8000/health")
    assert fabric.rc == 7, (fabric.rc, fabric.stdout, fabric.stderr)


def test_the_engine_runs_the_selected_image(host):
    image = host.check_output("docker inspect -f '{{.Config.Image}}' sparkops-model-server")
    assert image == "10.77.0.5:5000/sparkops/lab-vllm:0.17.0"


def reports():
    """The scenario's deploy reports, oldest first (converge, then idempotence, of this run last)."""
    folder = os.path.join(os.path.dirname(__file__), "..", "..", "..", "build", "molecule-reports", "default")
    names = sorted(n for n in os.listdir(folder) if n.startswith("deploy-") and not n.endswith(".lock.json"))
    out = []
    for name in names:
        with open(os.path.join(folder, name)) as f:
            out.append(json.load(f))
    return out


def test_the_report_is_complete():
    """The converge run's report: every candidate probed and its status, the cluster, the fabric."""
    report = reports()[-2]
    assert report["outcome"] == "served" and report["error"] is None and report["unchanged"] is False
    assert report["image"]["selected"] == "10.77.0.5:5000/sparkops/lab-vllm:0.17.0"
    assert report["image"]["versions"]["engine"] == "0.17.0"
    status = dict((r["image"].split("/")[-1], r["status"]) for r in report["image"]["candidates"])
    assert status == {"lab-vllm:0.14.0": "rejected", "lab-sglang:0.5.4": "rejected",
                      "lab-vllm:0.17.0-arm64": "rejected", "lab-vllm:0.17.0": "selected",
                      "lab-sglang:0.5.10": "fits (an earlier candidate was chosen)"}
    launch = dict((r["image"].split("/")[-1], r["launcher"]) for r in report["image"]["candidates"])
    assert launch["lab-vllm:0.17.0"] == "ray" and launch["lab-sglang:0.5.10"] == "native"  # SGLang has no Ray
    assert report["ray"]["nodes"] == 2 and report["ray"]["gpus"] == 2
    assert report["serving"]["model"] == "qwen3.5-lab"
    assert report["serving"]["endpoint"] == "http://10.77.0.11:8000/v1"
    assert report["fabric"]["interface"] == "enp1s0f1np1"
    assert set(report["seconds"]) == {"preflight", "engine_image", "gpu_memory", "fabric", "ray_cluster",
                                      "model_server", "watchdog"}
    # the watchdog is opt-in: off here, and said so
    assert report["watchdog"]["enabled"] is False


def test_the_idempotence_run_changed_nothing_and_says_so():
    """Molecule's idempotence run (--skip-tags molecule-notest,notest: none of the deploy's own) is a
    re-run with nothing to change: the re-run check skipped the phases, and the report says what
    serves, from the record of the converge run, and that the engine answered now."""
    converge, again = reports()[-2:]
    assert again["outcome"] == "served" and again["unchanged"] is True
    assert again["unchanged_since"] is not None and again["unchanged_since"] <= again["finished"]
    assert again["image"]["selected"] == converge["image"]["selected"]
    assert again["image"]["candidates"] == []  # nothing was probed in this run
    assert again["serving"]["restarted"] is False and again["serving"]["endpoint"] == "http://10.77.0.11:8000/v1"
    assert again["serving"]["completion"] == converge["serving"]["completion"]
    assert (again["ray"]["nodes"], again["fabric"]["interface"]) == (2, "enp1s0f1np1")
