"""LAB STAND-IN for an inference engine's OpenAI-compatible server (vllm serve / sglang).

The lab has no GPU, so no real engine can load a model. This stand-in is built into the lab
engine images (/opt/sparkops-lab/model_server.py) and takes vLLM's or SGLang's command line.

vLLM (`serve MODEL ...`): before it answers /health it proves the Ray cluster can hold the
model: it connects to the running Ray cluster and places one actor per rank (tensor x pipeline
parallel size), each in a bundle of one GPU of a SPREAD placement group, as vLLM's Ray executor
does, and checks that every node got a rank.

vLLM native (`serve MODEL --distributed-executor-backend mp --nnodes N --node-rank R
--master-addr HOST --master-port PORT [--headless]`, one process per host, no Ray) and SGLang
(`--model-path MODEL --nnodes N --node-rank R --dist-init-addr HOST:PORT ...`): as their
torch.distributed rendezvous, rank 0 listens at the master (dist-init) address and waits for ranks
1..N-1 to join over the fabric; the other ranks connect there, and exit when rank 0 goes away.
Only rank 0 serves (vLLM's other ranks run --headless). As vLLM does, it refuses --nnodes > 1 with
the Ray backend, and a rank 0 started --headless. Then it serves:

    GET  /health                 200 once the actors are placed
    GET  /v1/models              {"data": [{"id": <served model name>, ...}]}
    GET  /metrics                Prometheus text in the real engine's series names (vLLM's
                                 vllm:num_requests_running ..., SGLang's sglang:num_running_reqs
                                 ...), counting the stand-in's own requests and words
    POST /v1/completions         a short, deterministic completion naming the actors' nodes
    POST /v1/chat/completions    the same as a chat message

SPARKOPS_LAB_LOAD_SECONDS=<s> (vLLM): after the actors are placed it waits that long before
/health answers 200, as a real engine loads its weights (nothing is loaded).

With an API key (vLLM: --api-key or VLLM_API_KEY; SGLang: --api-key or its --config YAML),
every /v1 path needs `Authorization: Bearer <key>`, else 401 {"error": "Unauthorized"}, as
vLLM's AuthenticationMiddleware answers; /health stays open.

Not a model: the "completion" is text made by the stand-in. Labelled as such in every answer
("system_fingerprint": "sparkops-lab-standin").
"""
import argparse
import hmac
import json
import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FINGERPRINT = "sparkops-lab-standin"
STATE = {"ready": False, "nodes": [], "error": None}
# what /metrics reports: the stand-in's own requests in flight and the words it answered
LOAD = {"running": 0, "prompt_tokens": 0, "generation_tokens": 0, "lock": threading.Lock()}


def metrics_text(engine, model):
    """Prometheus text in the shape of the real engine's series (see the plugin's _metrics.py)."""
    with LOAD["lock"]:
        running, prompt, generated = LOAD["running"], LOAD["prompt_tokens"], LOAD["generation_tokens"]
    if engine == "sglang":
        labels = 'engine_type="unified",model_name="%s",pp_rank="0",tp_rank="0"' % model
        series = [("sglang:num_running_reqs", "gauge", running), ("sglang:num_queue_reqs", "gauge", 0),
                  ("sglang:token_usage", "gauge", 0.0), ("sglang:gen_throughput", "gauge", 0.0),
                  ("sglang:prompt_tokens_total", "counter", prompt),
                  ("sglang:generation_tokens_total", "counter", generated)]
    else:
        labels = 'engine="0",model_name="%s"' % model
        series = [("vllm:num_requests_running", "gauge", running), ("vllm:num_requests_waiting", "gauge", 0),
                  ("vllm:kv_cache_usage_perc", "gauge", 0.0), ("vllm:prompt_tokens_total", "counter", prompt),
                  ("vllm:generation_tokens_total", "counter", generated)]
    lines = ["# LAB STAND-IN: these figures count the stand-in's own requests, not a model's"]
    for name, kind, value in series:
        lines += ["# TYPE %s %s" % (name, kind), "%s{%s} %s" % (name, labels, float(value))]
    return "\n".join(lines) + "\n"


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
    p.add_argument("--api-key", default=None)
    p.add_argument("--nnodes", "-n", type=int, default=1)
    p.add_argument("--node-rank", "-r", type=int, default=0)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=29501)
    p.add_argument("--headless", action="store_true")
    p.add_argument("--placement-timeout", type=float,
                   default=float(os.environ.get("SPARKOPS_LAB_PLACEMENT_TIMEOUT", "60")))
    args, unknown = p.parse_known_args(argv)
    if unknown:
        print("stand-in: ignoring engine options %s" % " ".join(unknown), flush=True)
    # what the shared rendezvous reads (SGLang's names)
    args.tp_size = args.tensor_parallel_size * args.pipeline_parallel_size
    args.dist_init_addr = "%s:%d" % (args.master_addr, args.master_port)
    return args


def parse_sglang_args(argv):
    p = argparse.ArgumentParser(prog="sparkops-lab model server (stand-in, SGLang's command line)")
    p.add_argument("command", nargs="?", default="serve")
    p.add_argument("--model-path", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--tp-size", type=int, default=1)
    p.add_argument("--mem-fraction-static", type=float, default=None)
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--dist-init-addr", default=None)
    p.add_argument("--context-length", type=int, default=None)
    p.add_argument("--api-key", default=None)
    p.add_argument("--config", default=None)
    p.add_argument("--placement-timeout", type=float,
                   default=float(os.environ.get("SPARKOPS_LAB_PLACEMENT_TIMEOUT", "60")))
    args, unknown = p.parse_known_args(argv)
    if unknown:
        print("stand-in: ignoring engine options %s" % " ".join(unknown), flush=True)
    args.model, args.max_model_len = args.model_path, args.context_length
    if args.config and not args.api_key:  # SGLang's --config YAML ("api-key: ..." is what we use)
        with open(args.config) as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() == "api-key":
                    args.api_key = json.loads(value.strip()) if value.strip().startswith('"') else value.strip()
    return args


def api_key(args, sglang=False):
    """The key the server requires on /v1 (vLLM: --api-key, else VLLM_API_KEY; SGLang: its
    arguments, --config included), None if none."""
    return args.api_key or (None if sglang else os.environ.get("VLLM_API_KEY")) or None


def _send(sock, obj):
    sock.sendall((json.dumps(obj) + "\n").encode())


def _watch(sock, what):
    """Block on a rank's connection; when it closes, exit as an engine does when a rank dies."""
    def run():
        try:
            while sock.recv(4096):
                pass
        except OSError:
            pass
        print("stand-in: error: %s is gone: exiting" % what, flush=True)
        os._exit(1)
    threading.Thread(target=run, daemon=True).start()


def sglang_rendezvous(args):
    """Ranks 0..nnodes-1 meet at --dist-init-addr (rank 0 listens). Returns every rank's node."""
    if args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        raise RuntimeError("--node-rank %d is not in 0..%d (--nnodes %d)"
                           % (args.node_rank, args.nnodes - 1, args.nnodes))
    if args.tp_size % args.nnodes:
        raise RuntimeError("--tp-size %d is not a multiple of --nnodes %d" % (args.tp_size, args.nnodes))
    if args.nnodes == 1:
        return [{"rank": 0, "ip": args.host}]
    if not args.dist_init_addr or ":" not in args.dist_init_addr:
        raise RuntimeError("--dist-init-addr HOST:PORT is needed with --nnodes %d" % args.nnodes)
    host, port = args.dist_init_addr.rsplit(":", 1)
    deadline = time.time() + args.placement_timeout
    if args.node_rank == 0:
        srv = socket.create_server((host, int(port)))  # fails like torch when the port is taken
        srv.settimeout(1)
        nodes, peers = [{"rank": 0, "ip": host}], []
        print("stand-in: rank 0 waiting at %s for %d ranks" % (args.dist_init_addr, args.nnodes - 1), flush=True)
        while len(nodes) < args.nnodes:
            if time.time() > deadline:
                raise RuntimeError("ranks %s did not join %s within %.0f s" % (
                    sorted(set(range(args.nnodes)) - set(n["rank"] for n in nodes)),
                    args.dist_init_addr, args.placement_timeout))
            try:
                conn, addr = srv.accept()
            except socket.timeout:
                continue
            conn.settimeout(10)
            try:
                hello = json.loads(conn.makefile().readline() or "{}")
            except (OSError, ValueError):
                conn.close()
                continue
            rank = hello.get("rank")
            if not isinstance(rank, int) or rank in [n["rank"] for n in nodes] or not 0 < rank < args.nnodes:
                _send(conn, {"error": "rank %r is taken or out of range" % rank})
                conn.close()
                continue
            conn.settimeout(None)
            nodes.append({"rank": rank, "ip": addr[0]})
            peers.append((rank, conn))
            print("stand-in: rank %d joined from %s" % (rank, addr[0]), flush=True)
        for rank, conn in peers:
            _send(conn, {"nodes": nodes})
            _watch(conn, "rank %d" % rank)
        return nodes
    while True:
        try:
            conn = socket.create_connection((host, int(port)), timeout=5)
            break
        except OSError as exc:
            if time.time() > deadline:
                raise RuntimeError("rank 0 at %s did not answer within %.0f s (%s)"
                                   % (args.dist_init_addr, args.placement_timeout, exc))
            time.sleep(0.5)
    _send(conn, {"rank": args.node_rank})
    conn.settimeout(args.placement_timeout)
    answer = json.loads(conn.makefile().readline() or "{}")
    if "error" in answer or "nodes" not in answer:
        raise RuntimeError("rank 0 refused rank %d: %s" % (args.node_rank, answer.get("error", "no answer")))
    conn.settimeout(None)
    _watch(conn, "rank 0 (%s)" % args.dist_init_addr)
    return answer["nodes"]


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
    if gpus < world:  # as vLLM's Ray executor: a warning, then it waits for the placement group
        print("stand-in: warning: the Ray cluster has %g GPUs, the model needs %d: waiting up to %.0f s "
              "for the placement group (nodes still joining)" % (gpus, world, args.placement_timeout), flush=True)
    # as vLLM's Ray executor: one bundle of one GPU per rank, spread over the nodes
    pg = placement_group([{"GPU": 1, "CPU": 0}] * world, strategy="SPREAD")
    if not pg.wait(args.placement_timeout):
        raise RuntimeError("could not place %d bundles of 1 GPU within %.0f s (the Ray cluster has %g GPUs)"
                           % (world, args.placement_timeout,
                              sum(n.get("Resources", {}).get("GPU", 0) for n in ray.nodes() if n.get("Alive"))))
    alive = [n for n in ray.nodes() if n.get("Alive")]

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

    def authorized(self):
        """As vLLM's AuthenticationMiddleware: /v1 paths need `Authorization: Bearer <key>`."""
        key = self.server.api_key
        if not key or not self.path.startswith("/v1"):
            return True
        scheme, dummy, given = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), key.encode()):
            return True
        self.reply(401, {"error": "Unauthorized"})
        return False

    def do_GET(self):
        name = self.server.model_name
        if not self.authorized():
            return
        if self.path == "/health":
            if STATE["ready"]:
                self.reply(200, {})
            else:
                self.reply(503, {"error": STATE["error"] or "placing actors on the Ray cluster"})
        elif self.path == "/metrics":
            body = metrics_text(self.server.engine, self.server.model_name).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
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
        if not self.authorized():
            return None
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            return self.reply(404, {"error": "not found"})
        with LOAD["lock"]:
            LOAD["running"] += 1
        try:
            return self.complete(req)
        finally:
            with LOAD["lock"]:
                LOAD["running"] -= 1

    def complete(self, req):
        if not STATE["ready"]:
            return self.reply(503, {"error": "not ready"})
        if req.get("model") not in (self.server.model_name, None):
            return self.reply(404, {"error": "The model `%s` does not exist." % req.get("model")})
        text = "lab stand-in answer from %d %s on %s" % (
            len(STATE["nodes"]), self.server.ranks, ", ".join(sorted(set(n["ip"] for n in STATE["nodes"]))))
        with LOAD["lock"]:
            LOAD["prompt_tokens"] += len(str(req.get("prompt") or req.get("messages") or "").split())
            LOAD["generation_tokens"] += len(text.split())
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


def main_native(args, engine):
    """One rank of a launch without Ray (SGLang's, or vLLM's mp backend across hosts)."""
    try:
        if engine == "vllm" and args.node_rank == 0 and args.headless:
            raise RuntimeError("--headless on --node-rank 0: the first rank serves the API")
        nodes = sglang_rendezvous(args)
    except Exception as exc:  # pylint: disable=broad-except
        print("stand-in: error: %s" % exc, flush=True)
        return 1
    if args.node_rank:  # only rank 0 serves; the others run their workers (vLLM: --headless)
        print("stand-in: rank %d of %d joined; serving through rank 0 at %s"
              % (args.node_rank, args.nnodes, args.dist_init_addr), flush=True)
        while True:
            time.sleep(3600)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.model_name = args.served_model_name or args.model
    server.model_path, server.max_len = args.model, args.max_model_len
    server.ranks = "SGLang ranks" if engine == "sglang" else "vLLM ranks (mp backend, no Ray)"
    server.engine = engine
    server.api_key = api_key(args, sglang=engine == "sglang")
    if engine == "sglang":  # as SGLang does at start: it logs its whole server_args, the API key with them
        print("stand-in: server_args=ServerArgs(model_path=%r, host=%r, port=%d, api_key=%r)"
              % (args.model, args.host, args.port, args.api_key), flush=True)
    else:
        load_weights()
    STATE["nodes"], STATE["ready"] = nodes, True
    print("stand-in: ready: serving %s from %d ranks (LAB STAND-IN, not an inference engine)"
          % (server.model_name, len(nodes)), flush=True)
    server.serve_forever()
    return 0


def load_weights():
    """A real engine loads its weights after its ranks are placed: minutes for a 120 GB model.
    The stand-in loads nothing; SPARKOPS_LAB_LOAD_SECONDS=<s> in its environment makes it wait
    that long before /health answers 200, so the lab can show an engine that is up, not serving."""
    seconds = float(os.environ.get("SPARKOPS_LAB_LOAD_SECONDS") or 0)
    if seconds > 0:
        STATE["error"] = "loading weights (LAB STAND-IN: SPARKOPS_LAB_LOAD_SECONDS=%g, nothing is loaded)" % seconds
        print("stand-in: %s" % STATE["error"], flush=True)
        time.sleep(seconds)
        STATE["error"] = None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    # as the engines do (uvicorn's and their own handlers): `docker stop` ends a rank at once, also
    # where it runs as the container's PID 1 (a native rank), which the kernel spares an unhandled TERM
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))
    sglang = "--model-path" in argv
    args = parse_sglang_args(argv) if sglang else parse_args(argv)
    if not os.path.isfile(os.path.join(args.model, "config.json")):
        print("stand-in: error: %s has no config.json" % args.model, flush=True)
        return 2
    if sglang:
        return main_native(args, "sglang")
    if args.nnodes > 1 and args.distributed_executor_backend == "ray":
        print("stand-in: error: --nnodes %d is for the mp backend: with --distributed-executor-backend ray "
              "the Ray cluster places the ranks (as vLLM refuses it)" % args.nnodes, flush=True)
        return 2
    if args.distributed_executor_backend == "mp":
        return main_native(args, "vllm")
    server = ThreadingHTTPServer((args.host, args.port), Handler)  # fails like vLLM when in use
    server.model_name = args.served_model_name or args.model
    server.model_path = args.model
    server.max_len = args.max_model_len
    server.ranks = "Ray actors"
    server.engine = "vllm"
    server.api_key = api_key(args)
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
    load_weights()
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
