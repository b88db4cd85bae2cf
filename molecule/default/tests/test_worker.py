"""Checks run from a worker (spark2), a host other than the head."""

testinfra_hosts = ["ansible://spark2"]


def test_ray_refuses_a_client_without_the_token(host):
    res = host.run("docker run --rm --network host 10.77.0.5:5000/sparkops/lab-engine:ray-2.60.0 "
                   "ray status --address 192.168.77.11:6379")
    assert res.rc != 0
    assert "Authentication token is missing or incorrect" in res.stdout + res.stderr
