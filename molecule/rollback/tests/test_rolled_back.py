"""After a deploy whose engine failed to start: the old model runs again, nothing of ours is left."""
import json


def test_old_model_runs_again_and_nothing_of_the_deploy_is_left(host):
    running = sorted(host.check_output("docker ps --format '{{.Names}}'").split())
    assert running == ["embeddings-embed-1", "old-vllm"]
    every = sorted(host.check_output("docker ps -a --format '{{.Names}}'").split())
    assert every == ["embeddings-embed-1", "old-vllm"]  # engine and Ray containers removed


def test_old_model_holds_its_gpu_memory_again(host):
    out = host.check_output("nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits")
    assert sorted(int(line.split(",")[1]) for line in out.splitlines()) == [2048, 40960]


def test_the_record_was_restored(host):
    assert not host.file("/var/lib/sparkops/gpu_memory_stopped.json").exists
    record = json.loads(host.file("/var/lib/sparkops/gpu_memory_stopped.json.restored").content_string)
    assert [e["name"] for e in record["stopped"]] == ["old-vllm", "embeddings-embed-1"]
