# -*- coding: utf-8 -*-
"""Bench helper (not part of the collection): where ansible-playbook's own CPU goes.

Loaded by bench/controller_cpu.py through PYTHONPATH (Python imports `sitecustomize` at start),
only when SPARKOPS_CONTROLLER_DIR names a directory. In each task worker (ansible-core forks one
per task and host) it runs cProfile around WorkerProcess._run and writes <pid>.prof there; in
every process it times each Jinja compile (jinja2.Environment.compile, process CPU) and appends
"<seconds>\\t<template>" to <pid>.jinja. Nothing else changes.
"""
import os
import time

OUT = os.environ.get("SPARKOPS_CONTROLLER_DIR")


def _profile_workers():
    from ansible.executor.process import worker  # pylint: disable=import-outside-toplevel

    run = worker.WorkerProcess._run  # pylint: disable=protected-access

    def _run(self):
        import cProfile  # pylint: disable=import-outside-toplevel
        prof = cProfile.Profile()
        prof.enable()
        try:
            return run(self)
        finally:
            prof.disable()
            prof.dump_stats(os.path.join(OUT, "%d.prof" % os.getpid()))

    worker.WorkerProcess._run = _run  # pylint: disable=protected-access


def _time_compiles():
    import jinja2.environment  # pylint: disable=import-outside-toplevel

    compile_ = jinja2.environment.Environment.compile

    def timed(self, source, *args, **kwargs):
        start = time.process_time()
        try:
            return compile_(self, source, *args, **kwargs)
        finally:
            text = source if isinstance(source, str) else "<parsed template>"
            with open(os.path.join(OUT, "%d.jinja" % os.getpid()), "a") as f:
                f.write("%.6f\t%s\n" % (time.process_time() - start, " ".join(text.split())[:200]))

    jinja2.environment.Environment.compile = timed


if OUT:
    try:
        _profile_workers()
        _time_compiles()
    except ImportError:  # not ansible-playbook's Python: nothing to hook
        pass
