"""The lab's downloads (lab/sparklab.py download()): a failed attempt is retried after a pause, an
exit 0 that brought nothing is a failure, and the last failure names the source and the error."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "lab"))
import sparklab  # noqa: E402 pylint: disable=wrong-import-position,import-error

# what apt-get update (apt 2.6, Debian 12) prints when an index cannot be fetched - and exits 0
APT_INDEX_FAILED = (
    "W: Failed to fetch http://deb.debian.org/debian/dists/trixie/InRelease  "
    "Temporary failure resolving 'deb.debian.org'\n"
    "W: Some index files failed to download. They have been ignored, or old ones used instead.\n")


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(sparklab, "DOWNLOAD_PAUSE", 0)
    monkeypatch.setattr(sparklab, "DOWNLOAD_ATTEMPTS", 3)


def flaky(tmp_path, failures, stderr=""):
    """A real command that fails `failures` times (exit 1), then exits 0 printing `stderr`."""
    script = tmp_path / "flaky.sh"
    script.write_text("#!/bin/sh\nn=$(cat %s/count 2>/dev/null || echo 0)\necho $((n+1)) > %s/count\n"
                      "[ $n -ge %d ] || { echo 'Connection reset by peer' >&2; exit 1; }\nprintf '%%s' '%s' >&2\n"
                      % (tmp_path, tmp_path, failures, stderr.replace("'", "")))
    script.chmod(0o755)
    return [str(script)]


def test_a_download_that_fails_twice_is_retried_and_succeeds(tmp_path, capsys):
    res = sparklab.download("a thing", "a mirror", flaky(tmp_path, 2), lambda r: None)
    assert res.returncode == 0
    assert (tmp_path / "count").read_text().strip() == "3"
    out = capsys.readouterr().out
    assert "a thing from a mirror: attempt 1 of 3 failed (exit 1: Connection reset by peer)" in out
    assert "attempt 2 of 3 failed" in out


def test_an_apt_update_that_exits_0_without_its_lists_fails_naming_source_and_error(tmp_path):
    lists = tmp_path / "lists"
    lists.mkdir()
    with pytest.raises(sparklab.LabError) as err:
        sparklab.download("Debian trixie's package lists", "http://deb.debian.org/debian (trixie)",
                          flaky(tmp_path, 0, APT_INDEX_FAILED), sparklab.apt_lists_hold(str(lists), "trixie"))
    msg = str(err.value)
    assert "could not fetch Debian trixie's package lists from http://deb.debian.org/debian (trixie) (3 attempts)" in msg
    assert "W: Failed to fetch http://deb.debian.org/debian/dists/trixie/InRelease" in msg
    assert "Check that this machine reaches" in msg
    assert (tmp_path / "count").read_text().strip() == "3"


def test_apt_lists_and_debs_are_checked_for_what_was_asked(tmp_path):
    lists = tmp_path / "lists"
    lists.mkdir()
    ok = flaky(tmp_path, 0)
    (lists / "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages").write_text("")
    check = sparklab.apt_lists_hold(str(lists), "trixie")
    assert "no trixie package list" in check(sparklab.run(ok, check=False))
    (lists / "deb.debian.org_debian_dists_trixie_main_binary-amd64_Packages.lz4").write_text("")
    assert check(sparklab.run(ok, check=False)) is None
    debs = tmp_path / "debs"
    debs.mkdir()
    (debs / "containerd_1.7.24~ds1-6+b4_amd64.deb").write_text("")
    check = sparklab.debs_in(str(debs), ["docker.io", "containerd"])
    assert check(sparklab.run(ok, check=False)) == "no .deb of docker.io in %s" % debs


def test_a_cut_wheel_is_removed_and_named(tmp_path):
    (tmp_path / "vllm-0.14.0-cp38-abi3-manylinux_2_31_aarch64.whl").write_bytes(b"PK\x03\x04 cut short")
    problem = sparklab.wheel_ok(str(tmp_path), "vllm-0.14.0-")
    assert "is not a whole wheel" in problem and not os.listdir(tmp_path)
    assert sparklab.wheel_ok(str(tmp_path), "vllm-0.14.0-") == "no vllm-0.14.0-*.whl in %s" % tmp_path


def test_an_install_is_checked_by_its_dist_info_local_version_label_included(tmp_path):
    # what pip --target leaves for the CPU build of torch and for ray (seen in the lab cache's layers)
    for name in ("torch-2.13.0+cpu.dist-info", "ray-2.60.0.dist-info"):
        (tmp_path / name).mkdir()
    assert sparklab.dist_info_in(str(tmp_path), "torch", "2.13.0") == "torch-2.13.0+cpu.dist-info"
    assert sparklab.dist_info_in(str(tmp_path), "ray", "2.60.0") == "ray-2.60.0.dist-info"
    assert sparklab.dist_info_in(str(tmp_path), "ray", "2.6") is None  # not a prefix of another version
    assert sparklab.dist_info_in(str(tmp_path / "absent"), "ray", "2.60.0") is None
