"""LAB STAND-IN for an inference engine's OpenAI-compatible server (vllm serve / sglang).

The lab has no GPU, so no real engine can load a model. This stand-in is built into the lab
engine images (/opt/sparkops-lab/model_server.py) and takes vLLM's command line. Before it
answers /health it proves the Ray cluster can hold the model: it connects to the running Ray
cluster and places one actor per rank (tensor x pipeline parallel size), each in a bundle of one GPU of a
SPREAD placement group, as vLLM's Ray executor does, and checks that every node got a rank. Then it serves:

    GET  /health                 200 once the actors are placed
    GET  /v1/models              {"data": [{"id": <served model name>, ...}]}
    POST /v1/completions         a short, deterministic completion naming the actors' nodes
    POST /v1/chat/completions    the same as a chat message

Not a model: the "completion" is text made by the stand-in. Labelled as such in every answer
("system_fingerprint": "sparkops-lab-standin").
"""
import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FINGERPRINT = "sparkops-lab-standin"
STATE = {"ready": False, "nodes": [], "error": None}


def parse_args(argv):
    p = argparse.ArgumentParser(prog="sparkops-lab model server (stand-in)")
    p.add_argument("command", nargs="?", default="serve")
    p.add_argument("model")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--tensor-parallel-size", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", type=int, default=1)
    p.add_argument("--distributed-executor-backend", default="ray")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--max-model-len", type=int, default=None)
    p.add_argument("--placement-timeout", type=float,
                   default=float(os.environ.get("SPARKOPS_LAB_PLACEMENT_TIMEOUT", "60")))
    args, unknown = p.parse_known_args(argv)
    if unknown:
        print("stand-in: ignoring engine options %s" % " ".join(unknown), flush=True)
    return args


def place_actors(args):
    """One actor per node, each with that node's share of the GPUs, as the Ray executor does."""
    import ray
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    world = args.tensor_parallel_size * args.pipeline_parallel_size
    ray.init(address="auto", logging_level="ERROR", log_to_driver=False)
    alive = [n for n in ray.nodes() if n.get("Alive")]
    gpus = sum(n.get("Resources", {}).get("GPU", 0) for n in alive)
    print("stand-in: Ray cluster has %d nodes, %g GPUs; the model wants %d GPUs "
          "(tensor-parallel %d x pipeline-parallel %d)" % (len(alive), gpus, world,
                                                           args.tensor_parallel_size,
                                                           args.pipeline_parallel_size), flush=True)
    if gpus < world:
        raise RuntimeError("the Ray cluster has %g GPUs, the model needs %d (tensor-parallel %d x "
                           "pipeline-parallel %d)" % (gpus, world, args.tensor_parallel_size,
                                                      args.pipeline_parallel_size))
    # as vLLM's Ray executor: one bundle of one GPU per rank, spread over the nodes
    pg = placement_group([{"GPU": 1, "CPU": 0}] * world, strategy="SPREAD")
    if not pg.wait(args.placement_timeout):
        raise RuntimeError("could not place %d bundles of 1 GPU within %.0f s"
                           % (world, args.placement_timeout))

    @ray.remote(num_cpus=0)
    class Worker(object):
        def where(self):
            return {"ip": ray.util.get_node_ip_address(), "gpus": ray.get_gpu_ids()}

    actors = [Worker.options(num_gpus=1, scheduling_strategy=PlacementGroupSchedulingStrategy(
        placement_group=pg, placement_group_bundle_index=i)).remote() for i in range(world)]
    placed = ray.get([a.where.remote() for a in actors], timeout=args.placement_timeout)
    used = set(p["ip"] for p in placed)
    idle = sorted(set(n["NodeManagerAddress"] for n in alive) - used)
    if idle and world >= len(alive):
        raise RuntimeError("the ranks were placed on %s only; nodes %s got none"
                           % (", ".join(sorted(used)), ", ".join(idle)))
    STATE["actors"] = actors  # keep them alive for as long as the server runs
    return placed


class Handler(BaseHTTPRequestHandler):
    server_version = "sparkops-lab-standin/1"

    def log_message(self, fmt, *a):  # health polls would bury the start-up lines: log the rest
        if self.path != "/health":
            print("stand-in: %s %s" % (self.command, self.path), flush=True)

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        name = self.server.model_name
        if self.path == "/health":
            if STATE["ready"]:
                self.reply(200, {})
            else:
                self.reply(503, {"error": STATE["error"] or "placing actors on the Ray cluster"})
        elif self.path == "/v1/models":
            self.reply(200, {"object": "list", "data": [{
                "id": name, "object": "model", "owned_by": FINGERPRINT,
                "root": self.server.model_path, "max_model_len": self.server.max_len}]})
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            req = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self.reply(400, {"error": "body is not JSON"})
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            return self.reply(404, {"error": "not found"})
        if not STATE["ready"]:
            return self.reply(503, {"error": "not ready"})
        if req.get("model") not in (self.server.model_name, None):
            return self.reply(404, {"error": "The model `%s` does not exist." % req.get("model")})
        text = "lab stand-in answer from %d Ray actors on %s" % (
            len(STATE["nodes"]), ", ".join(sorted(set(n["ip"] for n in STATE["nodes"]))))
        choice = {"index": 0, "finish_reason": "length"}
        if self.path == "/v1/completions":
            choice["text"] = text
            obj = "text_completion"
        else:
            choice["message"] = {"role": "assistant", "content": text}
            obj = "chat.completion"
        self.reply(200, {"id": "cmpl-standin", "object": obj, "created": int(time.time()),
                         "model": self.server.model_name, "system_fingerprint": FINGERPRINT,
                         "choices": [choice],
                         "usage": {"prompt_tokens": 1, "completion_tokens": len(text.split()),
                                   "total_tokens": 1 + len(text.split())}})


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if not os.path.isfile(os.path.join(args.model, "config.json")):
        print("stand-in: error: %s has no config.json" % args.model, flush=True)
        return 2
    server = ThreadingHTTPServer((args.host, args.port), Handler)  # fails like vLLM when in use
    server.model_name = args.served_model_name or args.model
    server.model_path = args.model
    server.max_len = args.max_model_len
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("stand-in: listening on %s:%d (LAB STAND-IN, not an inference engine)"
          % (args.host, args.port), flush=True)
    try:
        STATE["nodes"] = place_actors(args)
    except Exception as exc:  # pylint: disable=broad-except
        import traceback  # pylint: disable=import-outside-toplevel
        traceback.print_exc()
        print("stand-in: error: %s" % exc, flush=True)
        return 1
    for n in STATE["nodes"]:
        print("stand-in: actor on %s, GPU ids %s" % (n["ip"], n["gpus"]), flush=True)
    STATE["ready"] = True
    print("stand-in: ready: serving %s" % server.model_name, flush=True)
    import ray  # pylint: disable=import-outside-toplevel
    while True:  # as an engine does, die when a rank dies (its node left the cluster)
        time.sleep(5)
        try:
            ray.get([a.where.remote() for a in STATE["actors"]], timeout=30)
        except Exception as exc:  # pylint: disable=broad-except
            print("stand-in: error: a rank is gone (%s): exiting" % str(exc).splitlines()[0][:200], flush=True)
            os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
