# -*- coding: utf-8 -*-
# Copyright: (c) 2026, sparkops.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine's secrets: where a user may not put them, where they go on a host, and how text
we print is kept free of them. Pure functions."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# In the engine container: the host's sparkops_secrets_dir, read-only.
IN_CONTAINER = "/run/sparkops/secrets"
API_KEY_FILE = "engine-api-key"
# SGLang takes its key only from its arguments; its --config YAML (`api-key: "<key>"`, the key
# as a JSON string, which YAML reads as a string) is the one place that is not argv.
SGLANG_CONFIG_FILE = "sglang-api-key.yaml"
HF_TOKEN_FILE = "hf-token"

# The engines' own command-line flags that carry a secret, and the environment variables the
# engines and huggingface_hub read one from: either would land in `docker inspect`, the
# process list or the env file.
SECRET_FLAGS = {
    "--api-key": "sparkops_engine_api_key",
    "--admin-api-key": "sparkops_engine_api_key",
    "--hf-token": "sparkops_hf_token",
    "--token": "sparkops_hf_token",
}
SECRET_ENV = {
    "VLLM_API_KEY": "sparkops_engine_api_key",
    "OPENAI_API_KEY": "sparkops_engine_api_key",
    "HF_TOKEN": "sparkops_hf_token",
    "HUGGING_FACE_HUB_TOKEN": "sparkops_hf_token",
    "HUGGINGFACE_HUB_TOKEN": "sparkops_hf_token",
}
# vLLM reads VLLM_API_KEY; the wrapper sets it from the mounted file inside the container, so
# neither Docker's config nor the command line ever holds the key. vLLM does not log it (its
# "non-default args" line lists argv options only); --api-key would be logged there.
VLLM_WRAPPER = ('k=%s/%s; if [ -r "$k" ]; then VLLM_API_KEY="$(cat "$k")"; export VLLM_API_KEY; fi; exec "$@"'
                % (IN_CONTAINER, API_KEY_FILE))
REDACTED = "(secret)"


def leaks(places):
    """Problems for secrets given where they would leak. places: {variable name: list of
    arguments or dict of environment variables}; each problem names the variable, what it
    holds and the variable to use instead."""
    problems = []
    for var in sorted(places):
        value = places[var]
        if isinstance(value, dict):
            for key in sorted(str(k) for k in value):
                if key.upper() in SECRET_ENV:
                    problems.append(
                        "%s sets %s: a secret there lands in the container's environment (docker inspect) "
                        "or the env file. Set %s (or %s_file) instead - vault it" % (
                            var, key, SECRET_ENV[key.upper()], SECRET_ENV[key.upper()]))
        elif isinstance(value, (list, tuple)):
            for arg in value:
                flag = str(arg).split("=", 1)[0]
                if flag in SECRET_FLAGS:
                    problems.append(
                        "%s holds %s: a secret there lands in the container's command line (docker inspect, "
                        "ps on the host). Set %s (or %s_file) instead - vault it" % (
                            var, flag, SECRET_FLAGS[flag], SECRET_FLAGS[flag]))
    return problems


def sources(name, value_set, file_path, file_readable):
    """Problems with one secret's two sources (a variable, a file on the controller)."""
    if value_set and file_path:
        return ["both %s and %s_file are set: set one" % (name, name)]
    if file_path and not file_readable:
        return ["%s_file is %s: no readable file there on the controller" % (name, file_path)]
    return []


def scrub(text, secrets):
    """`text` with every secret of `secrets` (4 characters or more) replaced by REDACTED."""
    text = text or ""
    for secret in sorted((s for s in secrets if s and len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text
