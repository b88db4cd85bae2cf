# -*- coding: utf-8 -*-
"""LayerFS (the layers in place) and TarFS (the export stream) follow an image's symbolic links
inside the image, never on the host: a crafted image (links deeper than any fixed depth, links at
host paths, a loop, a link that climbs with `..`) never makes the probe - root on the host - read
or list the host's files; both name the loops and the links that climb out."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import re
import tarfile

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils import _image_fs
from ansible_collections.sparkops.inference.plugins.module_utils._image_fs import MAX_LINKS, LayerFS, TarFS


def as_tar(layers):
    """TarFS over what `docker export` streams for these layers (lowest first, upper wins),
    keeping every file's content (the probe keeps only the files it reads: _image_fs.KEEP)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for layer in reversed(layers):
            tar.add(layer, arcname=".")
    buf.seek(0)
    keep, _image_fs.KEEP = _image_fs.KEEP, [re.compile(".*")]
    try:
        with tarfile.open(fileobj=buf, mode="r") as tar:
            return TarFS(tar)
    finally:
        _image_fs.KEEP = keep


@pytest.fixture(params=["layers", "export"])
def image(tmp_path, request):
    """(layers, a host file and directory the image's links aim at)"""
    host = tmp_path / "host"
    (host / "secrets").mkdir(parents=True)
    (host / "secrets" / "shadow").write_text("HOST SECRET\n")
    upper, lower = tmp_path / "upper", tmp_path / "lower"
    for d in ("etc", "usr/bin", "usr/lib/python3", "opt"):
        (lower / d).mkdir(parents=True)
    (upper / "opt").mkdir(parents=True)
    (lower / "etc" / "os-release").write_text("IMAGE\n")
    (lower / "usr" / "bin" / "python3.11").write_text("")
    os.symlink("python3.11", str(lower / "usr" / "bin" / "python3"))
    os.symlink("usr/lib", str(lower / "lib"))
    (lower / "usr" / "lib" / "python3" / "site.py").write_text("# site\n")
    secret = str(host / "secrets" / "shadow")
    # a chain of links deeper than the 8 levels the old walk followed, ending at a host path
    for i in range(1, 12):
        os.symlink("/chain%d" % (i + 1), str(upper / ("chain%d" % i)))
    os.symlink(secret, str(upper / "chain12"))
    # nine links: the ninth, past the old walk's depth, was handed to the host, which followed it
    for i in range(1, 9):
        os.symlink("/deep%d" % (i + 1), str(upper / ("deep%d" % i)))
    os.symlink(secret, str(upper / "deep9"))
    os.symlink(str(host / "secrets"), str(upper / "opt" / "hostdir"))  # a directory link at a host path
    os.symlink("../../../../../../../../.." + secret, str(lower / "usr" / "lib" / "climb"))
    os.symlink("/loop2", str(upper / "loop1"))
    os.symlink("/loop1", str(upper / "loop2"))
    layers = [str(upper), str(lower)]
    return (LayerFS(layers) if request.param == "layers" else as_tar(layers)), secret


def test_links_are_followed_inside_the_image(image):
    fs, dummy = image
    assert fs.read_text("/etc/os-release") == "IMAGE\n"
    assert fs.exists("/usr/bin/python3") and not fs.isdir("/usr/bin/python3")
    assert fs.read_text("/lib/python3/site.py") == "# site\n"  # through a directory link
    assert sorted(fs.listdir("/lib/python3")) == ["site.py"]
    assert fs.glob("/usr/lib/python3/*.py") == ["/usr/lib/python3/site.py"]


def test_no_link_reads_or_lists_a_host_file(image):
    fs, secret = image
    assert os.path.exists(secret)  # the host has it
    assert fs.read_text("/deep1") is None  # the old walk returned "HOST SECRET" here
    for path in ("/deep1", "/chain1", "/chain12", "/opt/hostdir/shadow", "/usr/lib/climb", secret):
        assert fs.read_text(path) is None, path
        assert not fs.exists(path), path
    assert fs.listdir("/opt/hostdir") == [] and not fs.isdir("/opt/hostdir")
    assert "hostdir" in fs.listdir("/opt")  # the link itself is the image's


def test_a_loop_reads_as_absent_and_is_noted(image):
    fs, dummy = image
    assert fs.read_text("/loop1") is None and not fs.exists("/loop1/x")
    assert fs.loops and all(p in ("/loop1", "/loop2") for p in fs.loops)
    assert MAX_LINKS >= 40


def test_a_link_that_climbs_above_the_root_points_outside_the_image(image):
    fs, secret = image
    assert fs.read_text("/usr/lib/climb") is None
    assert fs.outside == {"/usr/lib/climb -> ../../../../../../../../..%s" % secret}
    # a link that climbs and stays inside is a link like any other
    if isinstance(fs, LayerFS):
        os.symlink("../lib/python3/site.py", os.path.join(fs.layers[1], "usr", "bin", "sitelink"))
    else:
        fs.links["/usr/bin/sitelink"] = "../lib/python3/site.py"
    assert fs.read_text("/usr/bin/sitelink") == "# site\n" and len(fs.outside) == 1


def test_the_probe_names_links_outside_the_image_and_loops(image):
    """static_facts over the crafted image: no engine (it has none), and the links it refused."""
    from ansible_collections.sparkops.inference.plugins.module_utils._engine import static_facts
    fs, secret = image
    for path in ("/usr/lib/climb", "/loop1"):
        fs.read_text(path)
    facts = static_facts(fs, {"Env": ["PATH=/usr/bin"]})
    text = " ".join(facts["errors"])
    assert "symbolic links that point outside the image, read as absent: /usr/lib/climb -> " in text
    assert "symbolic-link loops, read as absent: /loop" in text
    assert "HOST SECRET" not in text
