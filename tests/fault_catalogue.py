"""docs/faults.md, generated from the lab tests' fault markers - never kept by hand.

Each fault case of tests/integration is a test marked (a test that proves several cases on one set-up
carries a marker for each)

    @pytest.mark.fault(fault="...", inject="...", message="...", left="...")

(what goes wrong, how the test causes it, what the operator reads, what the test proves is
left running). This reads the markers from the test files (no test runs) and writes the
table; tests/integration/test_90_static.py fails when docs/faults.md is not what it writes.
The level where each case is proven (a whole deploy, a phase run alone with its tag, ray.yml,
teardown.yml, a module called with `ansible -m`, ...) is read from what the test and the helpers
it calls run (those of its file, and conftest.py's): the playbooks and tags named in their calls.

    python3 tests/fault_catalogue.py          # write docs/faults.md (make faults-doc)
    python3 tests/fault_catalogue.py --check  # exit 1 when docs/faults.md is out of date
"""
import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests", "integration")
DOC = os.path.join(ROOT, "docs", "faults.md")
FIELDS = ("fault", "inject", "message", "left")


class MarkerError(Exception):
    pass


def _is_fault_marker(node):
    f = node.func if isinstance(node, ast.Call) else None
    return (isinstance(f, ast.Attribute) and f.attr == "fault" and isinstance(f.value, ast.Attribute)
            and f.value.attr == "mark")


PLAYS = (("deploy.yml", "whole deploy"), ("sparkops.inference.deploy", "whole deploy"),
         ("site.yml", "whole deploy (own play)"), ("playbooks/ray.yml", "ray.yml"),
         ("playbooks/probe.yml", "probe.yml"), ("playbooks/teardown.yml", "teardown.yml"),
         ("playbooks/status.yml", "status.yml"), ("playbooks/drift.yml", "drift.yml"))


def _calls(node):
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _strings(call):
    return [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]


def levels(func, helpers, seen=None):
    """The levels a test proves its case at, from the calls in it and in the helpers it calls."""
    seen = set() if seen is None else seen
    found = []
    for call in _calls(func):
        args = _strings(call)
        if "--tags" in args and args.index("--tags") + 1 < len(args):
            found.append("phase alone (--tags %s)" % args[args.index("--tags") + 1])
        elif any(a.endswith("/ansible") or a == "/ansible" for a in args) or (
                isinstance(call.func, ast.Name) and call.func.id == "run"
                and any(isinstance(a, ast.List) and any(isinstance(e, ast.BinOp) for e in a.elts) for a in call.args)
                and "-m" in [e.value for a in call.args if isinstance(a, ast.List)
                             for e in a.elts if isinstance(e, ast.Constant)]):
            found.append("module (ansible -m)")
        else:
            found += [level for play, level in PLAYS if any(a == play or a.endswith("/" + play) for a in args)]
        texts = [c.value for c in ast.walk(call) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        if any("roles:\n    - sparkops.inference.deploy" in t for t in texts):  # a play file the test writes
            found.append("whole deploy (the role in the user's own play)")
        for op in (n for n in ast.walk(call) if isinstance(n, ast.BinOp)):  # LAB + ["reboot", ...]
            if isinstance(op.left, ast.Name) and op.left.id == "LAB" and isinstance(op.right, ast.List) \
                    and _strings(ast.Call(func=None, args=op.right.elts, keywords=[]))[:1] == ["reboot"]:
                found.append("a lab host rebooted (no playbook)")
        name = call.func.id if isinstance(call.func, ast.Name) else None
        if name in helpers and name not in seen:
            seen.add(name)
            found += levels(helpers[name], helpers, seen)
    return found


def _level_text(found):
    """'whole deploy x2, teardown.yml': each level once, in the order met, with its count."""
    counts = {}
    for level in found:
        counts[level] = counts.get(level, 0) + 1
    return ", ".join(level + (" x%d" % n if n > 1 else "") for level, n in counts.items()) or "-"


def _helpers(tree):
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("test_")}


def cases(tests_dir=TESTS):
    """[{file, test, fault, inject, message, left, params}] in file and line order."""
    found = []
    shared = {}  # conftest.py's helpers (engine_phase, ...), which a test file's own override
    if os.path.exists(os.path.join(tests_dir, "conftest.py")):
        with open(os.path.join(tests_dir, "conftest.py")) as f:
            shared = _helpers(ast.parse(f.read()))
    for name in sorted(os.listdir(tests_dir)):
        if not (name.startswith("test_") and name.endswith(".py")):
            continue
        path = os.path.join(tests_dir, name)
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        helpers = dict(shared, **_helpers(tree))
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            params = 1
            markers = []  # a test that proves several cases (one set-up, several faults) has a marker each
            for dec in node.decorator_list:
                if _is_fault_marker(dec):
                    markers.append(dec)
                elif (isinstance(dec, ast.Call) and getattr(dec.func, "attr", "") == "parametrize"
                      and len(dec.args) > 1 and isinstance(dec.args[1], (ast.List, ast.Tuple))):
                    params = len(dec.args[1].elts)
            level = _level_text(levels(node, helpers)) if markers else None
            for marker in markers:
                found.append(_entry(name, node.name, params, level, marker))
    return found


def _entry(name, test, params, level, marker):
    entry = {"file": name, "test": test, "params": params, "level": level}
    for kw in marker.keywords:
        if kw.arg not in FIELDS or not (isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)):
            raise MarkerError("%s::%s: the fault marker takes the string arguments %s; found %s"
                              % (name, test, ", ".join(FIELDS), kw.arg))
        entry[kw.arg] = " ".join(kw.value.value.split())
    missing = [k for k in FIELDS if not entry.get(k)]
    if missing:
        raise MarkerError("%s::%s: the fault marker has no %s" % (name, test, ", ".join(missing)))
    return entry


def _cell(text):
    return text.replace("|", "\\|")


def render(entries):
    total = sum(e["params"] for e in entries)
    out = ["# Fault catalogue", "",
           "<!-- generated by tests/fault_catalogue.py from the tests' fault markers: do not edit;",
           "     `make faults-doc` writes it, test_90_static checks it is current -->", "",
           "Every row is a lab test (`tests/integration/`) that causes the fault on the simulated Sparks and",
           "asserts both what the operator reads and what is left running afterwards. %d cases in %d tests."
           % (total, len({(e["file"], e["test"]) for e in entries})),
           "A test with several parameters counts once per parameter; a test that proves several cases on",
           "one set-up has a row for each. *Proven by* is what the test runs:",
           "a whole deploy, a phase run alone with its tag (`deploy.yml --tags fabric`), ray.yml, teardown.yml,",
           "a module called on the lab hosts with `ansible -m` (the cheapest that shows the case; the set-up",
           "a test shares with its file is not counted).", ""]
    by_file = {}
    for e in entries:
        by_file.setdefault(e["file"], []).append(e)
    n = 0
    for name, rows in by_file.items():
        out += ["## %s" % name, "",
                "| # | Fault | How the test injects it | What the operator reads | What is left running | Proven by | Test |",
                "|---|---|---|---|---|---|---|"]
        for e in rows:
            n += 1
            test = "`%s`%s" % (e["test"], " (x%d)" % e["params"] if e["params"] > 1 else "")
            out.append("| %d | %s | %s | %s | %s | %s | %s |" % (
                n, _cell(e["fault"]), _cell(e["inject"]), _cell(e["message"]), _cell(e["left"]), e["level"], test))
        out.append("")
    return "\n".join(out)


def main(argv):
    text = render(cases())
    if "--check" in argv:
        try:
            with open(DOC) as f:
                current = f.read()
        except IOError:
            current = ""
        if current != text:
            print("docs/faults.md is out of date: run python3 tests/fault_catalogue.py", file=sys.stderr)
            return 1
        return 0
    with open(DOC, "w") as f:
        f.write(text)
    print("wrote %s" % DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
