"""Checks that only make sense on the head (spark1)."""

testinfra_hosts = ["ansible://spark1"]


def test_ray_cluster_spans_both_hosts_with_their_gpus(host):
    snippet = ("import ray; ray.init(address='auto', logging_level='ERROR'); "
               "print(sorted((n['NodeManagerAddress'], n['Resources'].get('GPU')) for n in ray.nodes() if n['Alive']))")
    out = host.check_output('docker exec sparkops-ray-head python3 -c "%s"' % snippet)
    assert out.splitlines()[-1] == "[('192.168.77.11', 1.0), ('192.168.77.12', 1.0)]"
