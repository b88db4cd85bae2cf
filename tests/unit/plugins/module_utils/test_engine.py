# -*- coding: utf-8 -*-
# Static probe, verdicts and selection over the REAL engine releases from PyPI: each test
# installs a release's source tree the way the official images do (lab/sparklab.py's
# extract_engine, the same code that builds the lab images) into a directory that stands
# for an image layer, and reads it as the probe reads an image.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import sys
import tarfile
import zipfile

import pytest

from ansible_collections.sparkops.inference.plugins.module_utils._containers import engine_command
from ansible_collections.sparkops.inference.plugins.module_utils._engine import (
    EngineError,
    cli_flags,
    model_architectures,
    parse_runtime_output,
    select,
    sglang_entry_classes,
    static_facts,
    table_text,
    verdicts,
    vllm_registry,
)
from ansible_collections.sparkops.inference.plugins.module_utils._image_fs import LayerFS, TarFS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))))
sys.path.insert(0, os.path.join(ROOT, "lab"))
import sparklab  # noqa: E402 pylint: disable=wrong-import-position,import-error

QWEN35 = "Qwen3_5MoeForConditionalGeneration"
ENV = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
# the lab's releases, and what users pull in late 2026 (vLLM 0.34.0; SGLang 0.5.23, whose wheels are
# built per Python: the .py files are taken)
RELEASES = [("vllm", "0.14.0", "wheel"), ("vllm", "0.17.0", "wheel"), ("vllm", "0.34.0", "wheel"),
            ("sglang", "0.5.4", "editable-pth"), ("sglang", "0.5.10", "editable-finder"),
            ("sglang", "0.5.23", "editable-finder")]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(engine, version) -> (root dir of the 'image', wheel path) for every release."""
    out = {}
    for engine, version, how in RELEASES:
        wheel = sparklab.engine_wheel(engine, version)
        root = str(tmp_path_factory.mktemp("%s-%s" % (engine, version)))
        sparklab.extract_engine(wheel, root, engine, version, how)
        os.makedirs(os.path.join(root, "usr/bin"))
        with open(os.path.join(root, "usr/bin/python3"), "w") as f:
            f.write("")
        out[(engine, version)] = (root, wheel)
    return out


def oracle_archs(wheel, engine):
    """What the release's own registry contains, read with plain text search (no ast)."""
    with zipfile.ZipFile(wheel) as z:
        if engine == "vllm":
            text = z.read("vllm/model_executor/models/registry.py").decode()
            return set(re.findall(r'^\s+"(\w+)":\s*\(\s*(?:#[^\n]*)?\s*"(?!transformers)', text, re.M))
        names = set()
        for n in z.namelist():
            if n.startswith("sglang/srt/models/") and n.count("/") == 3 and n.endswith(".py"):
                text = z.read(n).decode("utf-8-sig")
                m = re.search(r"^EntryClass\s*=\s*(\[[^\]]*\]|\w+)", text, re.M)
                if m:
                    names.update(re.findall(r"\w+", m.group(1)))
        return names


@pytest.mark.parametrize("engine,version,has_qwen35", [
    ("vllm", "0.14.0", False), ("vllm", "0.17.0", True), ("vllm", "0.34.0", True),
    ("sglang", "0.5.4", False), ("sglang", "0.5.10", True), ("sglang", "0.5.23", True)])
def test_verdicts_match_the_release_registry(installed, engine, version, has_qwen35):
    root, wheel = installed[(engine, version)]
    facts = static_facts(LayerFS([root]), ENV)
    assert facts["engine"] == engine
    assert facts["versions"][engine] == version
    assert facts["errors"] == []
    expected = oracle_archs(wheel, engine)
    assert (QWEN35 in expected) is has_qwen35  # what REAL-WORLD.md says of these releases
    found = set(facts["native"])
    assert found - {"TransformersForCausalLM"} == expected - {"TransformersForCausalLM"}
    got, notes = verdicts(facts, [QWEN35, "LlamaForCausalLM", "NoSuchModelForCausalLM"])
    assert got[QWEN35] == ("native" if has_qwen35 else "fallback")
    assert got["LlamaForCausalLM"] == "native"  # every release has it
    assert got["NoSuchModelForCausalLM"] == "fallback"  # none has it; both have a Transformers backend
    assert any("NoSuchModelForCausalLM" in n for n in notes)


def test_editable_sglang_is_found_at_its_source(installed):
    for version, how in (("0.5.4", ".pth line"), ("0.5.10", "finder map")):
        root = installed[("sglang", version)][0]
        facts = static_facts(LayerFS([root]), ENV)
        assert facts["editable"] is True, how
        assert facts["engine_path"] == "/sgl-workspace/sglang/python/sglang", how
        assert not os.path.exists(os.path.join(root, sparklab.SITE, "sglang"))


def test_editable_found_without_direct_url(installed):
    """An editable install without direct_url.json (older pip): the .pth line leads to it."""
    root = installed[("sglang", "0.5.4")][0]
    info = os.path.join(root, sparklab.SITE, "sglang-0.5.4.dist-info", "direct_url.json")
    saved = open(info).read()
    os.unlink(info)
    try:
        facts = static_facts(LayerFS([root]), ENV)
    finally:
        with open(info, "w") as f:
            f.write(saved)
    assert facts["engine_path"] == "/sgl-workspace/sglang/python/sglang"
    assert QWEN35 not in facts["native"]


def test_vllm_registry_tables(installed):
    root = installed[("vllm", "0.17.0")][0]
    text = open(os.path.join(root, sparklab.SITE, "vllm/model_executor/models/registry.py")).read()
    models, removed = vllm_registry(text)
    assert models[QWEN35] == ("qwen3_5", QWEN35)
    assert models["TransformersForCausalLM"][0] == "transformers"
    assert all(isinstance(v, str) for v in removed.values())


def test_a_model_vllm_0_34_removed_is_not_servable(installed):
    """vLLM 0.3x keeps _PREVIOUSLY_SUPPORTED_MODELS (arch -> the release that last had it): such an
    architecture is neither native nor served by the Transformers fallback, and the note says so."""
    root = installed[("vllm", "0.34.0")][0]
    facts = static_facts(LayerFS([root]), ENV)
    assert facts["removed"]["Phi4MultimodalForCausalLM"] == "0.12.0"
    assert not set(facts["removed"]) & set(facts["native"])
    got, notes = verdicts(facts, ["Phi4MultimodalForCausalLM"])
    assert got["Phi4MultimodalForCausalLM"] not in ("native", "fallback")
    assert any("Phi4MultimodalForCausalLM was removed from vllm" in n and "0.12.0" in n for n in notes), notes


def test_layers_whiteouts_and_opaque_dirs(installed, tmp_path):
    """An upper layer that deletes the engine's registry (whiteout) hides it."""
    lower = installed[("vllm", "0.17.0")][0]
    upper = tmp_path / "upper"
    reg_dir = upper / sparklab.SITE / "vllm/model_executor/models"
    reg_dir.mkdir(parents=True)
    os.mknod(str(reg_dir / "registry.py"), 0o600 | 0o020000, os.makedev(0, 0))
    fs = LayerFS([str(upper), lower])
    assert not fs.exists("/" + sparklab.SITE + "/vllm/model_executor/models/registry.py")
    assert "registry.py" not in fs.listdir("/" + sparklab.SITE + "/vllm/model_executor/models")
    facts = static_facts(fs, ENV)
    assert facts["native"] == [] and any("registry.py is missing" in e for e in facts["errors"])
    # an opaque directory: what the lower layer had under it is gone
    opaque = tmp_path / "opaque"
    site = opaque / sparklab.SITE
    site.mkdir(parents=True)
    os.setxattr(str(site), "trusted.overlay.opaque", b"y")
    facts = static_facts(LayerFS([str(opaque), lower]), ENV)
    assert facts["engine"] is None


def test_tar_stream_reads_the_same_as_layers(installed, tmp_path):
    """The docker-export path (TarFS) gives the same answer as reading layers in place."""
    root = installed[("sglang", "0.5.10")][0]
    tar_path = str(tmp_path / "fs.tar")
    with tarfile.open(tar_path, "w") as tar:
        tar.add(root, arcname=".")
    with tarfile.open(tar_path, "r|") as tar:
        tfs = TarFS(tar)
    a, b = static_facts(tfs, ENV), static_facts(LayerFS([root]), ENV)
    assert a == b
    assert QWEN35 in a["native"]


def test_image_without_python_or_engine(tmp_path):
    facts = static_facts(LayerFS([str(tmp_path)]), ENV)
    assert facts["engine"] is None and facts["python"] is None
    assert any("no python3" in e for e in facts["errors"])
    assert any("no inference engine" in e for e in facts["errors"])


def test_entry_class_forms():
    assert sglang_entry_classes("EntryClass = Foo\n") == ["Foo"]
    assert sglang_entry_classes("EntryClass = [A, mod.B]\n") == ["A", "B"]
    # syntax the host's Python cannot parse still yields the assignment
    assert sglang_entry_classes("def f[T](x: T): pass\nEntryClass = [A, B]\n") == ["A", "B"]
    assert sglang_entry_classes("x = 1\n") == []


def test_model_config_errors(tmp_path):
    cfg = tmp_path / "config.json"
    with pytest.raises(EngineError, match="does not exist"):
        model_architectures(None, str(cfg))
    with pytest.raises(EngineError, match="is not JSON"):
        model_architectures("{nope", str(cfg))
    with pytest.raises(EngineError, match="no \"architectures\" list"):
        model_architectures('{"model_type": "qwen3_5_moe"}', str(cfg))
    assert model_architectures(json.dumps({"architectures": [QWEN35], "model_type": "qwen3_5_moe"}),
                               str(cfg)) == ([QWEN35], "qwen3_5_moe")


NATIVE_ONLY = {"ray": "no Ray in the image", "native": None}


def probe(engine, version, arch_verdict, ray="2.60.0", platform="linux/amd64", digest="d1"):
    return {"engine": engine, "versions": {"engine": version, "ray": ray}, "platform": platform,
            "digest": "repo@" + digest, "id": digest, "architectures": {QWEN35: arch_verdict}, "errors": []}


def test_select_first_fitting_and_table():
    probes = {
        "vllm:0.14": {"s1": probe("vllm", "0.14.0", "fallback"), "s2": probe("vllm", "0.14.0", "fallback")},
        "vllm:arm": {"s1": probe("vllm", "0.17.0", "native", platform="linux/arm64"),
                     "s2": probe("vllm", "0.17.0", "native", platform="linux/arm64")},
        "sglang:noray": {"s1": probe("sglang", "0.5.10", "native", ray=None),
                         "s2": probe("sglang", "0.5.10", "native", ray=None)},
        "vllm:noray": {"s1": dict(probe("vllm", "0.17.0", "native", ray=None), launchers=NATIVE_ONLY),
                       "s2": dict(probe("vllm", "0.17.0", "native", ray=None), launchers=NATIVE_ONLY)},
        "vllm:moved": {"s1": probe("vllm", "0.17.0", "native", digest="a"),
                       "s2": probe("vllm", "0.17.0", "native", digest="b")},
        "vllm:pullfail": {"s1": probe("vllm", "0.17.0", "native"), "s2": {"error": "pull timed out"}},
        "vllm:0.17": {"s1": probe("vllm", "0.17.0", "native"), "s2": probe("vllm", "0.17.0", "native")},
        "vllm:later": {"s1": probe("vllm", "0.17.0", "native"), "s2": probe("vllm", "0.17.0", "native")},
    }
    platforms = {"s1": "linux/amd64", "s2": "linux/amd64"}
    selected, rows = select(list(probes), probes, platforms, launcher="ray")
    assert selected == "vllm:0.17"
    why = dict((r["image"], " | ".join(r["reasons"])) for r in rows)
    assert "vllm 0.14.0 lacks %s (only its generic Transformers backend: fallback)" % QWEN35 \
        in why["vllm:0.14"]
    assert "built for linux/arm64, s1 is linux/amd64" in why["vllm:arm"]
    assert why["sglang:noray"] == "sparkops_launcher is ray: no Ray in the image"
    assert why["vllm:noray"] == "sparkops_launcher is ray: no Ray in the image"
    assert "different images" in why["vllm:moved"]
    assert "s2: pull timed out" in why["vllm:pullfail"]
    assert [r["status"] for r in rows][-2:] == ["selected", "fits (an earlier candidate was chosen)"]
    text = "\n".join(table_text(rows))
    assert "vllm:0.17" in text and "rejected" in text
    assert re.search(r"^vllm:noray +rejected +vllm 0\.17\.0 +ray - +launch - ", text, re.M), text
    assert re.search(r"^vllm:0\.17 +selected +vllm 0\.17\.0 +ray 2\.60\.0 +launch ray ", text, re.M), text
    # auto: Ray where the image has it, else the engine's own multi-node launch (a row's launcher)
    selected, rows = select(["vllm:noray", "vllm:0.17"], probes, platforms)
    assert selected == "vllm:noray" and rows[0]["launcher"] == "native" and rows[1]["launcher"] == "ray"
    assert re.search(r"^vllm:noray +selected +vllm 0\.17\.0 +ray - +launch native ",
                     "\n".join(table_text(rows)), re.M)
    # native asked: an image with Ray is launched natively when its CLI offers it, refused when not
    both = dict(probe("vllm", "0.17.0", "native"), launchers={"ray": None, "native": None})
    assert select(["b"], {"b": {"s1": both}}, platforms, "native")[1][0]["launcher"] == "native"
    old = dict(probe("vllm", "0.9.0", "native"), launchers={
        "ray": None, "native": "vllm's command line has no --headless (read x)"})
    assert select(["o"], {"o": {"s1": old}}, platforms, "native")[1][0]["reasons"] == [
        "sparkops_launcher is native: vllm's command line has no --headless (read x)"]
    # an image from a probe that did not read the CLI (the runtime probe) has only Ray to offer
    assert select(["o"], {"o": {"s1": probe("vllm", "0.17.0", "native", ray=None)}}, platforms)[1][0][
        "reasons"] == ["no launcher: no Ray in the image; native: not probed for it"]
    with pytest.raises(EngineError, match="sparkops_launcher is 'mpi': expected auto, ray or native"):
        select(["o"], {"o": {"s1": old}}, platforms, "mpi")
    with pytest.raises(EngineError, match="candidate list is empty"):
        select([], probes, platforms, True)


def test_runtime_output_parsing():
    line = "SPARKOPS_PROBE " + json.dumps({
        "engine": "vllm", "versions": {"vllm": "0.17.0"}, "native": [QWEN35, "LlamaForCausalLM"],
        "fallback": ["TransformersForCausalLM"], "removed": {}, "errors": [],
        "loaded": {QWEN35: False}})
    facts = parse_runtime_output(0, "noise\n" + line + "\n", "", "img")
    assert QWEN35 not in facts["native"]  # listed, but its class does not import
    assert verdicts(facts, [QWEN35])[0][QWEN35] == "fallback"
    assert "no python3" in parse_runtime_output(
        127, "", 'exec: "python3": executable file not found in $PATH', "img")["errors"][0]
    assert "another CPU architecture" in parse_runtime_output(
        1, "", "exec /usr/bin/python3: exec format error", "img")["errors"][0]


def test_versions_from_a_real_h200_python(fixture_text, tmp_path):
    """Captured on a lent H200 host (tests/device/validate_probe.py): the runtime snippet's own
    output, and torch's version.py read by the static probe, give the same torch/CUDA."""
    facts = parse_runtime_output(0, fixture_text("h200-probe", "runtime-stdout.txt"), "", "host python")
    assert facts["versions"]["torch"] == "2.11.0" and facts["versions"]["cuda"] == "13.0"
    assert facts["versions"]["triton"] == "3.6.0" and facts["versions"]["transformers"] == "5.17.0"
    assert facts["engine"] is None and any("no inference engine" in e for e in facts["errors"])
    site = tmp_path / "opt/torch/.venv/lib/python3.12/site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("")
    (site / "torch" / "version.py").write_text(fixture_text("h200-probe", "torch-version.py"))
    info = site / "torch-2.11.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n\nbody\n")
    static = static_facts(LayerFS([str(tmp_path)]), {"Env": ["PATH=/opt/torch/.venv/bin:/usr/bin"]})
    assert static["versions"]["torch"] == "2.11.0" and static["versions"]["cuda"] == "13.0"
    recorded = json.loads(fixture_text("h200-probe", "probe.json"))["compare"]
    assert all(v["static"] == v["runtime"] for v in recorded.values())


def test_hosts_of_mixed_cpu_architectures_are_named():
    """uname -m as a Spark (aarch64) and an x86 box print it, through the facts host_prereqs sets."""
    from ansible_collections.sparkops.inference.plugins.module_utils._engine import host_inputs, mixed_platforms
    hostvars = {"spark1": {"ansible_facts": {"sparkops_host": {"architecture": "aarch64"}}},
                "spark2": {"ansible_facts": {"sparkops_host": {"architecture": "aarch64"}}},
                "x86box": {"ansible_facts": {"sparkops_host": {"architecture": "x86_64"}}}}
    dummy, same = host_inputs(["spark1", "spark2"], hostvars)
    assert mixed_platforms(same) is None
    dummy, mixed = host_inputs(["spark1", "spark2", "x86box"], hostvars)
    msg = mixed_platforms(mixed)
    assert msg.startswith("the cluster's hosts are of different CPU architectures: "
                          "linux/amd64 (x86box); linux/arm64 (spark1, spark2). ")
    assert "nothing was stopped" in msg


@pytest.mark.parametrize("engine,version", [(e, v) for e, v, dummy in RELEASES])
def test_launchers_and_command_line_flags_from_the_release_sources(installed, engine, version):
    """Every release we name offers the native launcher (its own multi-node options), read from
    its CLI sources; none has Ray here (the extracted tree carries the engine alone); and every
    option our command lines use - over Ray and native, each rank - is one its parser defines."""
    root, dummy = installed[(engine, version)]
    fs = LayerFS([root])
    facts = static_facts(fs, ENV)
    assert facts["launchers"] == {"ray": "no Ray in the image", "native": None}
    flags, read, errors = cli_flags(fs, engine, facts["engine_path"])
    assert read and not errors
    inputs = dict(engine=engine, model_path="/m", served_name="s", gpus_total=2, gpus_per_node=1, nodes=2,
                  gpu_memory_utilization=0.8, max_model_len=4096, head_address="10.0.0.1", api_key=False)
    used = set()
    for launcher in ("ray", "native") if engine == "vllm" else ("native",):
        for rank in (0, 1):
            for parallelism in ("tensor", "pipeline"):
                dummy_prog, args = engine_command(dict(inputs, launcher=launcher, node_rank=rank,
                                                       parallelism=parallelism))
                used.update(a for a in args if a.startswith("--"))
    assert used and used <= flags, sorted(used - flags)


def test_an_engine_without_its_multi_node_options_offers_no_native_launcher(installed, tmp_path):
    root, dummy = installed[("vllm", "0.17.0")]
    cli = next(os.path.join(d, f) for d, dummy, names in os.walk(root) for f in names
               if os.path.join(d, f).endswith("vllm/entrypoints/openai/cli_args.py"))
    layer = str(tmp_path / "upper")
    rel = os.path.relpath(cli, root)
    os.makedirs(os.path.dirname(os.path.join(layer, rel)))
    with open(cli) as f:
        text = f.read().replace('"--headless"', '"--not-headless"')
    with open(os.path.join(layer, rel), "w") as f:
        f.write(text)
    facts = static_facts(LayerFS([layer, root]), ENV)
    assert facts["launchers"]["native"].startswith("vllm's command line has no --headless (read ")
