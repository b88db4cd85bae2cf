"""After deploy then teardown with restore: Ray gone, the old model running again as it was."""
import json


def test_old_model_runs_again_and_ray_is_gone(host):
    running = sorted(host.check_output("docker ps --format '{{.Names}}'").split())
    assert running == ["embeddings-embed-1", "old-vllm"]
    every = sorted(host.check_output("docker ps -a --format '{{.Names}}'").split())
    assert every == ["embeddings-embed-1", "old-vllm"]


def test_old_model_holds_its_gpu_memory_again(host):
    out = host.check_output("nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits")
    assert sorted(int(line.split(",")[1]) for line in out.splitlines()) == [2048, 40960]


def test_record_was_used_once(host):
    assert not host.file("/var/lib/sparkops/gpu_memory_stopped.json").exists
    record = json.loads(host.file("/var/lib/sparkops/gpu_memory_stopped.json.restored").content_string)
    assert [e["name"] for e in record["stopped"]] == ["old-vllm", "embeddings-embed-1"]
