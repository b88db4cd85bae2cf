# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an engine image can serve, decided from its files; and which candidate to pick.

Pure logic over text and a read-only view of an image's files (see _image_fs.py): the
engines' registry sources are parsed with `ast`, never imported or executed. No
AnsibleModule import here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import json
import posixpath
import re

from ansible_collections.sparkops.inference.plugins.module_utils._docker import host_platform, same_platform

# bump when what a static probe returns changes: cached results of older probes are ignored
PROBE_VERSION = 7  # 6: the launchers the image offers (Ray installed; the CLI's multi-node flags);
# 7: the CLI's options also where vLLM 0.3x and SGLang 0.5.2x define them

ENGINES = ("sglang", "vllm")  # an SGLang image may carry vLLM as a library: SGLang wins
VERSION_PACKAGES = {
    "vllm": ["vllm"],
    "sglang": ["sglang"],
    "torch": ["torch"],
    "triton": ["triton", "pytorch-triton"],
    "transformers": ["transformers"],
    "flashinfer": ["flashinfer-python", "flashinfer"],
    "ray": ["ray"],
}
VLLM_REGISTRY = "model_executor/models/registry.py"
SGLANG_MODELS = "srt/models"
FALLBACK_MODULE = "transformers"  # vLLM's generic backend lives in models/transformers*
SGLANG_FALLBACK = "TransformersForCausalLM"
# The engines' own command-line sources (under the package directory), and the options a launch
# without Ray needs from them: vLLM's multiprocessing backend across hosts (--headless on the
# ranks that do not serve), SGLang's own launcher. Read as a feature, never a version number.
# (vLLM 0.3x moved the serve options to entrypoints/common/cli_args.py; SGLang 0.5.2x builds its
# options from the annotated fields of srt/arg_groups/fields/*.py, aliases in Arg(aliases=[...]))
CLI_SOURCES = {
    "vllm": ("engine/arg_utils.py", "entrypoints/openai/cli_args.py", "entrypoints/common/cli_args.py",
             "entrypoints/cli/serve.py"),
    "sglang": ("srt/server_args.py", "srt/arg_groups/fields/*.py"),
}
NATIVE_FLAGS = {
    "vllm": ("--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless"),
    "sglang": ("--nnodes", "--node-rank", "--dist-init-addr"),
}
LAUNCHERS = ("ray", "native")

SITE_GLOBS = [
    "/usr/lib/python3/dist-packages",
    "/usr/lib/python3*/site-packages",
    "/usr/lib/python3*/dist-packages",
    "/usr/local/lib/python3*/site-packages",
    "/usr/local/lib/python3*/dist-packages",
    "/opt/conda/lib/python3*/site-packages",
    "/opt/*/lib/python3*/site-packages",
    "/root/.local/lib/python3*/site-packages",
]


class EngineError(Exception):
    """Input that cannot be used (a model config, a candidate list); the text is for users."""


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def env_dict(env_list):
    out = {}
    for item in env_list or []:
        key, sep, value = item.partition("=")
        if sep:
            out[key] = value
    return out


def site_dirs(fs, env):
    """Directories where the image's Python keeps installed distributions."""
    patterns = list(SITE_GLOBS)
    for entry in env.get("PATH", "").split(":"):
        if entry.endswith("/bin") and entry not in ("/bin", "/usr/bin", "/usr/local/bin", "/sbin",
                                                    "/usr/sbin", "/usr/local/sbin"):
            patterns.append(entry[:-4] + "/lib/python3*/site-packages")
    for entry in env.get("PYTHONPATH", "").split(":"):
        if entry.startswith("/"):
            patterns.append(entry)
    seen = []
    for pattern in patterns:
        for path in fs.glob(pattern):
            if path not in seen and fs.isdir(path):
                seen.append(path)
    return seen


def find_python(fs, env):
    dirs = [d for d in env.get("PATH", "").split(":") if d.startswith("/")] or ["/usr/bin"]
    for d in dirs + ["/usr/bin", "/usr/local/bin"]:
        for name in ("python3", "python"):
            path = posixpath.join(d, name)
            if fs.exists(path):
                return path
    return None


def parse_metadata(text):
    """Name and Version of a METADATA / PKG-INFO file."""
    info = {}
    for line in text.splitlines():
        if not line.strip():
            break  # headers end at the first blank line; the description follows
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in info:
            info[key] = value.strip()
    return info


def distributions(fs, sites):
    """canonical name -> {name, version, site, info_dir} of every installed distribution."""
    found = {}
    for site in sites:
        for entry in fs.listdir(site):
            if not entry.endswith((".dist-info", ".egg-info")):
                continue
            info_dir = posixpath.join(site, entry)
            meta = None
            for fname in ("METADATA", "PKG-INFO"):
                meta = fs.read_text(posixpath.join(info_dir, fname))
                if meta is not None:
                    break
            parsed = parse_metadata(meta or "")
            stem = entry.rsplit(".", 1)[0]
            name = parsed.get("Name") or stem.split("-")[0]
            version = parsed.get("Version") or (stem.split("-")[1] if "-" in stem else None)
            key = canonical(name)
            if key not in found:
                found[key] = {"name": name, "version": version, "site": site, "info_dir": info_dir}
    return found


def editable_roots(fs, dist, sites):
    """Source roots an editable install points at: direct_url.json, .pth lines, finder maps."""
    roots = []
    direct = fs.read_text(posixpath.join(dist["info_dir"], "direct_url.json"))
    if direct:
        try:
            data = json.loads(direct)
        except ValueError:
            data = {}
        url = data.get("url", "") if isinstance(data, dict) else ""
        if url.startswith("file://") and (data.get("dir_info") or {}).get("editable"):
            roots.append(url[len("file://"):])
    for site in sites:
        for entry in fs.listdir(site):
            path = posixpath.join(site, entry)
            if entry.endswith(".pth"):
                for line in (fs.read_text(path) or "").splitlines():
                    line = line.strip()
                    if line.startswith("/"):
                        roots.append(line)
            elif entry.startswith("__editable__") and entry.endswith("_finder.py"):
                roots.extend(finder_roots(fs.read_text(path) or ""))
    return roots


def finder_roots(text):
    """Directories named in a setuptools editable finder's MAPPING (package -> its source dir)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "MAPPING" for t in node.targets):
            try:
                mapping = ast.literal_eval(node.value)
            except ValueError:
                return []
            return [posixpath.dirname(v.rstrip("/")) for v in mapping.values()
                    if isinstance(v, str)]
    return []


def package_dir(fs, name, dist, sites):
    """Where package `name` lives: next to its dist-info, or at an editable install's source."""
    candidates = [posixpath.join(dist["site"], name)] if dist else []
    if dist:
        candidates += [posixpath.join(root, name) for root in editable_roots(fs, dist, sites)]
    for site in sites:
        candidates.append(posixpath.join(site, name))
    for path in candidates:
        if fs.isdir(path) and fs.exists(posixpath.join(path, "__init__.py")):
            return path, (dist is not None and not path.startswith(dist["site"] + "/"))
    return None, False


# ----------------------------------------------------------------------------- registries

def vllm_registry(text):
    """Architectures of a vLLM registry.py: {arch: (module, class)} and removed archs.

    Every module-level dict whose values are ("module", "Class") tuples is a model table
    (_TEXT_GENERATION_MODELS, _MULTIMODAL_MODELS, ...); _VLLM_MODELS merges them.
    """
    tree = ast.parse(text.lstrip("\ufeff"))
    models = {}
    removed = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            value = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets, value = [node.target.id], node.value
        else:
            continue
        if not isinstance(value, ast.Dict):
            continue
        for key, val in zip(value.keys, value.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            if isinstance(val, ast.Tuple) and len(val.elts) >= 2 and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in val.elts[:2]):
                models[key.value] = (val.elts[0].value, val.elts[1].value)
            elif "PREVIOUSLY" in "".join(targets) and isinstance(val, ast.Constant):
                removed[key.value] = str(val.value)
    if not models:
        raise EngineError("no model table found in vLLM's registry source")
    return models, removed


def sglang_entry_classes(text):
    """Class names a SGLang model module registers through EntryClass.

    Only the (last) module-level `EntryClass = ...` statement is parsed with ast - the modules
    are long, the statement short. One the host's Python cannot parse is read with a pattern;
    None when neither can read it.
    """
    text = text.lstrip("\ufeff")  # a BOM, as Python's own import accepts
    # Parse only the EntryClass statement (the modules are long; the assignment is near the
    # end): from its first line, as many lines as make a complete statement.
    found = list(re.finditer(r"^EntryClass\s*=", text, re.M))
    if not found:
        return []  # no module-level EntryClass: the module registers nothing
    lines = text[found[-1].start():].splitlines()  # the last assignment is the one that counts
    for n in range(1, min(len(lines), 200) + 1):
        try:
            tree = ast.parse("\n".join(lines[:n]))
            break
        except (SyntaxError, ValueError):
            continue
    else:
        tree = None
    if tree is None:
        m = re.match(r"EntryClass\s*=\s*(\[[^\]]*\]|\([^)]*\)|[\w.]+)", "\n".join(lines))
        if not m:
            return None
        return [n.split(".")[-1] for n in re.findall(r"[A-Za-z_][\w.]*", m.group(1))]
    names = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            names = []
            for v in values:
                if isinstance(v, ast.Name):
                    names.append(v.id)
                elif isinstance(v, ast.Attribute):
                    names.append(v.attr)
    return names


def engine_archs(fs, engine, pkg):
    """{native: [...], fallback: [...], removed: {arch: version}, errors: [...]} of an engine."""
    errors = []
    if engine == "vllm":
        path = posixpath.join(pkg, VLLM_REGISTRY)
        text = fs.read_text(path)
        if text is None:
            return None, ["vLLM is installed but %s is missing" % path]
        try:
            models, removed = vllm_registry(text)
        except (SyntaxError, EngineError) as exc:
            return None, ["%s could not be read: %s" % (path, exc)]
        native = sorted(a for a, (mod, dummy) in models.items() if not mod.startswith(FALLBACK_MODULE))
        fallback = sorted(a for a, (mod, dummy) in models.items() if mod.startswith(FALLBACK_MODULE))
        return {"native": native, "fallback": fallback, "removed": removed}, errors
    models_dir = posixpath.join(pkg, SGLANG_MODELS)
    if not fs.isdir(models_dir):
        return None, ["SGLang is installed but %s is missing" % models_dir]
    native = set()
    for entry in sorted(fs.listdir(models_dir)):
        if not entry.endswith(".py") or entry.startswith("__"):
            continue
        names = sglang_entry_classes(fs.read_text(posixpath.join(models_dir, entry)) or "")
        if names is None:
            errors.append("%s/%s does not parse" % (models_dir, entry))
            continue
        native.update(names)
    fallback = sorted(native & {SGLANG_FALLBACK})
    return {"native": sorted(native - set(fallback)), "fallback": fallback, "removed": {}}, errors


def cli_flags(fs, engine, pkg):
    """(flags, files read, errors): the long options the engine's CLI sources define, read with
    `ast`: every add_argument("--x", ...) string, every annotated field of the classes there as
    --field-name (vLLM builds --host, --port, ... from its argument classes' fields, SGLang 0.5.2x
    likewise), and every "--x" of an aliases=[...] list (SGLang's Arg(aliases=...))."""
    flags, read, errors = set(), [], []
    paths = []
    for rel in CLI_SOURCES.get(engine, ()):
        pattern = posixpath.join(pkg, rel)
        paths.extend(fs.glob(pattern) if any(c in rel for c in "*?[") else [pattern])
    for path in paths:
        text = fs.read_text(path)
        if text is None:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            errors.append("%s could not be read: %s" % (path, exc))
            continue
        read.append(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                flags.update(a.value for a in node.args
                             if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"))
            if isinstance(node, ast.keyword) and node.arg == "aliases" and isinstance(node.value, (ast.List, ast.Tuple)):
                flags.update(a.value for a in node.value.elts
                             if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"))
            elif isinstance(node, ast.ClassDef):
                flags.update("--" + item.target.id.replace("_", "-") for item in node.body
                             if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                             and not item.target.id.startswith("_"))
    return flags, read, errors


def ray_offer(ray_version):
    """The `ray` launcher's entry: None (offered: Ray is installed) or why not."""
    return None if ray_version else "no Ray in the image"


def launchers(engine, ray_version, flags, read):
    """{launcher: None (offered) or why not} for an image: `ray` needs Ray installed; `native`
    needs the engine's own multi-node options (NATIVE_FLAGS) in its CLI sources."""
    out = {"ray": ray_offer(ray_version)}
    if not read:
        out["native"] = "%s's command-line sources (%s) were not found" % (
            engine, ", ".join(CLI_SOURCES.get(engine, ())) or "none known")
    else:
        missing = [f for f in NATIVE_FLAGS.get(engine, ()) if f not in flags]
        out["native"] = ("%s's command line has no %s (read %s)" % (engine, ", ".join(missing), ", ".join(read))
                         if missing else None)
    return out


def cuda_version(fs, torch_pkg, env):
    if torch_pkg:
        text = fs.read_text(posixpath.join(torch_pkg, "version.py")) or ""
        m = re.search(r"^cuda(?::\s*\S+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
        if m:
            return m.group(1)
    if env.get("CUDA_VERSION"):
        return env["CUDA_VERSION"]
    text = fs.read_text("/usr/local/cuda/version.json")
    if text:
        try:
            return json.loads(text)["cuda_cudart"]["version"]
        except (ValueError, KeyError, TypeError):
            pass
    return None


def static_facts(fs, config):
    """Everything a static probe learns about an image; cached by image id.

    config: the image's `docker image inspect` .Config (Env is used).
    """
    env = env_dict((config or {}).get("Env"))
    errors = []
    python = find_python(fs, env)
    sites = site_dirs(fs, env)
    dists = distributions(fs, sites)
    versions = {}
    for key, names in VERSION_PACKAGES.items():
        versions[key] = next((dists[canonical(n)]["version"] for n in names if canonical(n) in dists), None)
    engine = next((e for e in ENGINES if e in dists), None)
    facts = {"python": python, "engine": engine, "engine_path": None, "editable": False,
             "native": [], "fallback": [], "removed": {}, "versions": versions,
             "errors": errors, "probe_version": PROBE_VERSION}
    if python is None:
        errors.append("the image has no python3 (looked on its PATH %s): no Python engine can run "
                      "in it" % (env.get("PATH") or "(unset)"))
    if engine is None:
        errors.append("no inference engine installed: neither vLLM nor SGLang has a dist-info in "
                      "%s" % (", ".join(sites) or "the image (no Python site-packages found)"))
    else:
        pkg, editable = package_dir(fs, engine, dists[engine], sites)
        facts["engine_path"], facts["editable"] = pkg, editable
        if pkg is None:
            errors.append("%s %s is registered in %s but its package directory was not found "
                          "(editable install whose source is missing?)"
                          % (engine, versions[engine], dists[engine]["info_dir"]))
        else:
            archs, errs = engine_archs(fs, engine, pkg)
            errors.extend(errs)
            if archs:
                facts.update(archs)
            flags, read, errs = cli_flags(fs, engine, pkg)
            errors.extend(errs)
            facts["launchers"] = launchers(engine, versions["ray"], flags, read)
    torch_pkg = package_dir(fs, "torch", dists.get("torch"), sites)[0] if "torch" in dists else None
    versions["cuda"] = cuda_version(fs, torch_pkg, env)
    # links met on the way that the probe refused to follow (a crafted or broken image)
    outside, loops = sorted(getattr(fs, "outside", ())), sorted(getattr(fs, "loops", ()))
    if outside:
        errors.append("symbolic links that point outside the image, read as absent: %s" % "; ".join(outside[:5]))
    if loops:
        errors.append("symbolic-link loops, read as absent: %s" % ", ".join(loops[:5]))
    return facts


# ----------------------------------------------------------------------------- verdicts

def verdicts(facts, architectures):
    """{arch: native|fallback|unsupported} for the requested architectures, plus notes."""
    out, notes = {}, []
    native, fallback = set(facts.get("native") or []), set(facts.get("fallback") or [])
    for arch in architectures:
        if arch in native:
            out[arch] = "native"
        elif fallback and arch not in (facts.get("removed") or {}):
            out[arch] = "fallback"
            notes.append("%s is not in %s's own model registry: only its generic Transformers "
                         "backend could load it" % (arch, facts.get("engine")))
        else:
            out[arch] = "unsupported"
            if arch in (facts.get("removed") or {}):
                notes.append("%s was removed from %s (last supported in %s)"
                             % (arch, facts.get("engine"), facts["removed"][arch]))
    return out, notes


def result(image_info, facts, architectures, method):
    """The module's answer for one image."""
    archs, notes = verdicts(facts, architectures) if facts.get("engine") else (
        dict((a, "unsupported") for a in architectures), [])
    versions = dict(facts.get("versions") or {})
    engine = facts.get("engine")
    versions["engine"] = versions.get(engine) if engine else None
    return {
        "image": image_info.get("image"),
        "id": image_info.get("id"),
        "content_id": image_info.get("content_id"),
        "digest": image_info.get("digest"),
        "platform": image_info.get("platform"),
        "engine": engine,
        "editable": facts.get("editable", False),
        "engine_path": facts.get("engine_path"),
        "versions": dict((k, versions.get(k)) for k in
                         ("engine", "torch", "cuda", "triton", "transformers", "flashinfer", "ray")),
        "architectures": archs,
        "supported": bool(engine) and all(v == "native" for v in archs.values()),
        "method": method,
        "errors": list(facts.get("errors") or []),
        "notes": notes,
        "native_count": len(facts.get("native") or []),
        # launcher -> None (offered) or why not; a runtime probe does not read the CLI sources
        "launchers": facts.get("launchers") or {
            "ray": ray_offer(versions.get("ray")),
            "native": "not read (the runtime probe asks the engine's registry only)"},
    }


# ----------------------------------------------------------------------------- model config

def model_architectures(text, path):
    """(architectures, model_type) from a model's raw config.json; EngineError names the file."""
    if text is None:
        raise EngineError("%s does not exist: set model_path (sparkops_model_path) to the model "
                          "directory on the head host, or give the architectures with "
                          "engine_image_architectures" % path)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise EngineError("%s is not JSON (%s): expected the model's Hugging Face config.json"
                          % (path, exc))
    if not isinstance(data, dict):
        raise EngineError("%s holds a %s, expected a JSON object with \"architectures\""
                          % (path, type(data).__name__))
    archs = data.get("architectures")
    if not archs or not isinstance(archs, list) or not all(isinstance(a, str) and a for a in archs):
        raise EngineError("%s has no \"architectures\" list (found %s): expected e.g. "
                          "[\"Qwen3_5MoeForConditionalGeneration\"]; set engine_image_architectures "
                          "to name them" % (path, json.dumps(archs)))
    return archs, data.get("model_type")


# ----------------------------------------------------------------------------- selection

def same_image_key(res):
    """What says two hosts hold the same image: its content id (store-independent); an id or
    a digest from a probe of an older version of this collection."""
    return res.get("content_id") or res.get("id") or res.get("digest")


def choose_launcher(requested, probe):
    """(launcher, None) or (None, why) for one probed image.

    requested: auto (Ray when the image has it, else the engine's own multi-node launch), ray
    or native. probe: the image's probe result (its `launchers`: launcher -> None or why not).
    """
    if requested not in ("auto",) + LAUNCHERS:
        raise EngineError("sparkops_launcher is %r: expected auto, ray or native" % (requested,))
    offered = probe.get("launchers") or {
        "ray": ray_offer((probe.get("versions") or {}).get("ray")), "native": "not probed for it"}
    order = LAUNCHERS if requested == "auto" else (requested,)
    for launcher in order:
        if offered.get(launcher, "not probed for it") is None:
            return launcher, None
    if requested == "auto":
        return None, "no launcher: %s; native: %s" % (offered.get("ray") or "-", offered.get("native") or "-")
    return None, "sparkops_launcher is %s: %s" % (requested, offered.get(requested) or "not probed for it")


def candidate_problems(image, per_host, host_platforms, launcher="auto"):
    """Why a candidate cannot serve the model (empty list: it can).

    per_host: host -> probe result (or {"error": text} when pulling/probing failed there).
    """
    problems = []
    pending = sorted(h for h, r in per_host.items() if r.get("pending"))
    if pending:
        return ["not on %s yet: check mode pulls nothing, so it was not probed there" % ", ".join(pending)]
    failed = sorted(h for h, r in per_host.items() if r.get("error"))
    for h in failed:
        problems.append("%s: %s" % (h, per_host[h]["error"]))
    ok = dict((h, r) for h, r in per_host.items() if not r.get("error") and not r.get("pending"))
    if not ok:
        return problems
    # content ids: the same in the classic and the containerd image store, however obtained
    contents = set(same_image_key(r) for r in ok.values())
    if len(contents) > 1:
        problems.append("the hosts hold different images under this name (%s): the tag moved between "
                        "pulls; pull it again on every host (engine_image_pull_policy: always)"
                        % ", ".join("%s %s" % (h, (same_image_key(r) or "?")[7:19])
                                    for h, r in sorted(ok.items())))
    for h, r in sorted(ok.items()):
        want = host_platforms.get(h)
        if want and r.get("platform") and not same_platform(r["platform"], want):
            problems.append("built for %s, %s is %s" % (r["platform"], h, want))
            break
    first = ok[sorted(ok)[0]]
    if not first.get("engine"):
        problems.append("no engine (%s)" % "; ".join(first.get("errors") or ["neither vLLM nor SGLang"]))
        return problems
    for arch, verdict in sorted(first["architectures"].items()):
        if verdict != "native":
            problems.append("%s %s lacks %s (%s)" % (
                first["engine"], first["versions"].get("engine"), arch,
                "only its generic Transformers backend: fallback" if verdict == "fallback"
                else "unsupported"))
    dummy, why = choose_launcher(launcher, first)
    if why:
        problems.append(why)
    return problems


def select(candidates, probes, host_platforms, launcher="auto"):
    """(selected image or None, table rows) over candidates in preference order; each row's
    `launcher` is how that image would be launched (auto, ray or native asked: choose_launcher).

    probes: image -> host -> probe result.
    """
    if not candidates:
        raise EngineError("the candidate list is empty: set engine_image_candidates (or "
                          "sparkops_engine_candidates) to the images to try, preferred first")
    rows, selected = [], None
    for image in candidates:
        per_host = probes.get(image) or {}
        problems = candidate_problems(image, per_host, host_platforms, launcher) if per_host else [
            "not probed"]
        ok = [r for r in per_host.values() if not r.get("error") and not r.get("pending")]
        first = ok[0] if ok else {}
        chosen = choose_launcher(launcher, first)[0] if first.get("engine") else None
        if not problems and selected is None:
            selected, status = image, "selected"
        elif not problems:
            status = "fits (an earlier candidate was chosen)"
        else:
            status = "rejected"
        rows.append({
            "image": image,
            "status": status,
            "engine": first.get("engine"),
            "version": (first.get("versions") or {}).get("engine"),
            "ray": (first.get("versions") or {}).get("ray"),
            # launcher -> None (the image offers it) or why not; the one it would be launched with
            "launchers": first.get("launchers") or {},
            "launcher": chosen,
            "platform": first.get("platform"),
            "digest": first.get("digest"),
            "architectures": first.get("architectures") or {},
            "reasons": problems,
        })
    return selected, rows


def host_inputs(hosts, hostvars):
    """(probes: image -> host -> result, platforms: host -> 'linux/<arch>') from each host's
    sparkops_engine_probes and sparkops_host.architecture (facts, or a plain variable)."""
    probes, platforms = {}, {}
    for host in hosts:
        hv = hostvars[host]
        machine = ((hv.get("ansible_facts") or {}).get("sparkops_host") or {}).get("architecture") \
            or (hv.get("sparkops_host") or {}).get("architecture")
        if machine:
            platforms[host] = host_platform(machine)
        for image, res in (hv.get("sparkops_engine_probes") or {}).items():
            probes.setdefault(image, {})[host] = res
    return probes, platforms


def mixed_platforms(platforms):
    """A sentence when the hosts are not all of one platform (one image serves the whole
    cluster: Ray and NCCL need the same build on every host), else None."""
    kinds = sorted(set(platforms.values()))
    if len(kinds) < 2:
        return None
    by_kind = ["%s (%s)" % (k, ", ".join(sorted(h for h, v in platforms.items() if v == k))) for k in kinds]
    return ("the cluster's hosts are of different CPU architectures: %s. One engine image serves every "
            "host of a cluster (Ray and NCCL need the same build everywhere): make a cluster of hosts of "
            "one architecture (nothing was stopped)" % "; ".join(by_kind))


def pending(rows):
    """Whether a candidate could not be judged because check mode pulled nothing."""
    return any("check mode pulls nothing" in reason for r in rows for reason in r["reasons"])


def no_candidate_message(architectures, hosts, rows, launcher="auto"):
    """What a deploy says when no candidate can serve the model (nothing was stopped yet)."""
    need = {"auto": " and either Ray or its engine's own multi-node launch", "ray": " and Ray",
            "native": " and its engine's own multi-node launch"}.get(launcher, "")
    return "\n".join(
        ["No candidate image can serve %s on %s (nothing was stopped):"
         % (", ".join(architectures), ", ".join(hosts))]
        + table_text(rows)
        + ["Add an image that carries the model's architecture natively%s to engine_image_candidates"
           " (sparkops_launcher: %s)." % (need, launcher)])


def table_text(rows):
    """The candidate table as plain text lines."""
    lines = []
    width = max([len(r["image"]) for r in rows] + [5])
    for r in rows:
        engine = ("%s %s" % (r["engine"], r["version"] or "?")) if r["engine"] else "no engine"
        lines.append("%-*s  %-9s  %-16s  ray %-8s  launch %-6s  %s" % (
            width, r["image"], r["status"].split(" ")[0], engine, r["ray"] or "-",
            r.get("launcher") or "-", r["platform"] or "?"))
        for reason in r["reasons"]:
            lines.append("    - %s" % reason)
    return lines


# ----------------------------------------------------------------------------- runtime probe

# Run as `python3 -c RUNTIME_SNIPPET '<archs json>'` inside the image (network none). It asks
# the engine's own registry, and keeps the import errors the engines log and swallow.
RUNTIME_SNIPPET = r'''
import io, json, logging, sys
from importlib import metadata
archs = json.loads(sys.argv[1])
out = {"engine": None, "versions": {}, "native": [], "fallback": [], "removed": {},
       "errors": [], "loaded": {}}
PACKAGES = %s
for key, names in PACKAGES.items():
    for name in names:
        try:
            out["versions"][key] = metadata.version(name)
            break
        except Exception:
            out["versions"][key] = None
try:
    import torch
    out["versions"]["cuda"] = getattr(torch.version, "cuda", None)
except Exception as exc:
    out["versions"]["cuda"] = None
    out["errors"].append("import torch: %%s: %%s" %% (type(exc).__name__, exc))
buf = io.StringIO()
handler = logging.StreamHandler(buf)
logging.getLogger().addHandler(handler)
for eng in ("sglang", "vllm"):
    if out["versions"].get(eng):
        out["engine"] = eng
        break
try:
    if out["engine"] == "vllm":
        try:
            from vllm.plugins import load_general_plugins
            load_general_plugins()
        except Exception as exc:
            out["errors"].append("vllm plugins: %%s: %%s" %% (type(exc).__name__, exc))
        from vllm.model_executor.models.registry import ModelRegistry
        for arch in sorted(ModelRegistry.get_supported_archs()):
            model = ModelRegistry.models.get(arch)
            module = getattr(model, "module_name", "") or ""
            (out["fallback"] if ".transformers" in module else out["native"]).append(arch)
        for arch in archs:
            if arch in ModelRegistry.models:
                try:
                    ModelRegistry.models[arch].load_model_cls()
                    out["loaded"][arch] = True
                except Exception as exc:
                    out["loaded"][arch] = False
                    out["errors"].append("loading %%s: %%s: %%s" %% (arch, type(exc).__name__, exc))
    elif out["engine"] == "sglang":
        from sglang.srt.models.registry import ModelRegistry
        for arch in sorted(ModelRegistry.get_supported_archs()):
            (out["fallback"] if arch == "TransformersForCausalLM" else out["native"]).append(arch)
except Exception as exc:
    out["errors"].append("importing %%s's model registry failed: %%s: %%s"
                         %% (out["engine"], type(exc).__name__, str(exc)[:300]))
for line in buf.getvalue().splitlines():
    if "Ignore import error" in line or "Error" in line:
        out["errors"].append(line.strip()[:300])
print("SPARKOPS_PROBE " + json.dumps(out))
''' % json.dumps(VERSION_PACKAGES)


def parse_runtime_output(rc, stdout, stderr, image):
    """Facts (as static_facts returns them) from the runtime snippet's output."""
    for line in (stdout or "").splitlines():
        if line.startswith("SPARKOPS_PROBE "):
            data = json.loads(line[len("SPARKOPS_PROBE "):])
            facts = {"engine": data["engine"], "native": data["native"], "fallback": data["fallback"],
                     "removed": {}, "versions": data["versions"], "errors": data["errors"],
                     "editable": False, "engine_path": None, "probe_version": PROBE_VERSION}
            if data["engine"] and not data["native"]:
                facts["undecided"] = True
            for arch, ok in data.get("loaded", {}).items():
                if not ok:
                    facts["native"] = [a for a in facts["native"] if a != arch]
            if not data["engine"]:
                facts["errors"].append("no inference engine installed (neither vllm nor sglang "
                                       "is a distribution in the image's Python)")
            return facts
    text = ((stderr or "") + (stdout or "")).strip()
    low = text.lower()
    if "executable file not found" in low or "no such file or directory" in low and "python3" in low:
        msg = "the image %s has no python3 to run the runtime probe in" % image
    elif "exec format error" in low:
        msg = "the image %s is built for another CPU architecture (exec format error)" % image
    else:
        msg = "the runtime probe of %s failed (exit %d): %s" % (image, rc, text[-600:])
    return {"engine": None, "native": [], "fallback": [], "removed": {}, "versions": {},
            "errors": [msg], "editable": False, "engine_path": None, "undecided": True,
            "probe_version": PROBE_VERSION}
