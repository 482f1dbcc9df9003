"""The package's shape, checked from its source with ``ast``: imports run one way (no cycle,
imports inside functions included; the reporting layers import only downward) and no module
or function outgrows what one reader takes in at once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "workflow" / "tcbench"

# The package is two halves on shared ground; a folder (or a top-level module) is the unit of
# these rules, and inside one folder its modules import each other freely (no cycle).
# The reporting half, bottom to top: a unit imports only from its own layer or below. Its bottom
# layers are the shared ground: the job half writes records and classifies its kernels with them.
LAYERS = (
    ("vocabulary", "cli"),
    ("stats",),
    ("atomic", "record", "kernels", "energy", "closing", "resultset", "references"),
    ("analysis", "aggregate"),
    ("render",),
    ("reports",),
)
SHARED = 3   # LAYERS[:SHARED] is the shared ground
# The job half, bottom to top: where a job runs (host), what feeds and what measures its steps
# (data, measure), the workloads, one job (job), what runs in which order (launch), and the
# capacity study, which starts jobs. A unit imports from its own layer or below and from the
# shared ground; no reporting unit imports any of it.
JOB_LAYERS = (
    ("host",),
    ("data", "measure"),
    ("workloads",),
    ("job",),
    ("launch",),
    ("capacity",),
)
# the one crossing: the capacity study draws its report with the reporting half's tables
ALSO = {"capacity": {"render"}}
# the reporting half's own units (the shorter function limit is theirs)
REPORTING = {"stats", "resultset", "references", "analysis", "aggregate", "render", "reports",
             "closing", "kernels", "energy"}
JOB = {m for layer in JOB_LAYERS for m in layer}
MAX_TOP_MODULES = 12
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
MAX_REPORTING_FUNCTION_LINES = 60


def modules() -> dict[str, Path]:
    """Dotted name below tcbench ("reports.tables", "capacity" for its __init__) -> file."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(name: str, path: Path, node: ast.AST, known: dict) -> list[str]:
    """The tcbench modules one import statement imports."""
    package = ".".join(path.relative_to(PACKAGE).parent.parts)
    if isinstance(node, ast.Import):
        return [a.name.removeprefix("tcbench.") for a in node.names
                if a.name == "tcbench" or a.name.startswith("tcbench.")]
    if node.level == 0:
        if not (node.module or "").startswith("tcbench"):
            return []
        base = node.module.removeprefix("tcbench").lstrip(".")
    else:
        up = package.split(".") if package else []
        up = up[:len(up) - (node.level - 1)] if node.level > 1 else up
        base = ".".join([*up, *([node.module] if node.module else [])])
    found = []
    for a in node.names:               # from X import Y: Y is a module, or a name in X
        sub = f"{base}.{a.name}" if base else a.name
        found.append(sub if sub in known else base)
    return [f for f in found if f in known or f == ""]


def imports() -> dict[str, set[str]]:
    known = modules()
    graph = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        graph[name] = {m for node in ast.walk(tree) if isinstance(node, (ast.Import,
                                                                          ast.ImportFrom))
                       for m in _resolve(name, path, node, known) if m and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state, stack = {}, []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == "open":
                return stack[stack.index(m):] + [m]
            if m not in state and (cycle := visit(m)):
                return cycle
        state[n] = "done"
        stack.pop()
        return None

    for n in sorted(graph):
        if n not in state and (cycle := visit(n)):
            return cycle
    return None


def test_the_import_walk_sees_relative_absolute_and_function_level_imports():
    graph = imports()
    assert "resultset" in graph["reports.tables"]                 # from .. import resultset
    assert "analysis.diagnosis" in graph["reports.tables"]        # from ..analysis import x
    assert "render.table" in graph["capacity.report"]             # inside a function
    assert "vocabulary" in graph["launch.matrix"]
    assert "host.gpus" in graph["job.calibrate"]                  # from ..host import x, inside
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_the_package():
    assert find_cycle(imports()) is None


def unit(name: str) -> str:
    """The folder (or top-level module) a module belongs to."""
    return name.split(".")[0]


def units() -> dict[str, set[str]]:
    """Unit -> the other units it imports."""
    out: dict[str, set[str]] = {}
    for name, targets in imports().items():
        out.setdefault(unit(name), set()).update(unit(t) for t in targets)
    return {u: deps - {u} for u, deps in out.items() if u}


def test_no_import_cycle_between_folders():
    assert find_cycle(units()) is None


def _layer(name: str, layers=LAYERS) -> int | None:
    for i, layer in enumerate(layers):
        if unit(name) in layer:
            return i
    return None


def test_the_reporting_layers_import_only_downward():
    wrong = []
    for name, targets in imports().items():
        mine = _layer(name)
        if mine is None or unit(name) not in REPORTING:
            continue
        for t in targets:
            theirs = _layer(t)
            if theirs is None or theirs > mine:
                wrong.append(f"{name} -> {t}")
    assert wrong == []


def _job_half_may_import(name: str, target: str) -> bool:
    mine, theirs = _layer(name, JOB_LAYERS), _layer(target, JOB_LAYERS)
    if theirs is not None:
        return theirs <= mine
    shared = _layer(target)
    return (shared is not None and shared < SHARED) or unit(target) in ALSO.get(unit(name), ())


def test_the_job_half_imports_only_downward_and_the_shared_ground():
    wrong = [f"{name} -> {t}" for name, targets in imports().items() if unit(name) in JOB
             for t in targets if not _job_half_may_import(name, t)]
    assert wrong == []


def test_the_folder_rules_say_no_to_an_upward_import():
    assert _job_half_may_import("job.run", "host.gpus")
    assert _job_half_may_import("job.run", "record")
    assert not _job_half_may_import("workloads.classify", "job.train")     # upward
    assert not _job_half_may_import("launch.matrix", "capacity.plan")      # upward
    assert not _job_half_may_import("job.run", "analysis.speedup")         # the other half
    assert _job_half_may_import("capacity.report", "render.table")         # the one crossing


# the two shared abbreviations, one meaning each across the package; measure.core reads as measure;
# and longer names where the importing module's own parameter or function takes the module's name
ALIASES = {("vocabulary", "V"), ("record", "R"), ("core", "measure"),
           ("crossover", "fp8_crossover"), ("runs", "runs_level"), ("conditions", "run_conditions")}


def module_aliases(name: str, path: Path, known: dict) -> list[str]:
    """``module as alias`` for each tcbench module ``name`` imports under another name."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                targets = _resolve(name, path, ast.ImportFrom(node.module, [a], node.level),
                                   known)
                leaf = targets[0].rpartition(".")[2] if targets else ""
                if a.asname and targets and leaf == a.name and a.asname != leaf \
                        and (leaf, a.asname) not in ALIASES:
                    out.append(f"{name}: {leaf} as {a.asname}")
    return out


def test_a_module_is_imported_by_its_name():
    """``graphs``, not ``G`` (which was gpus elsewhere); ``reproduce``, not ``R`` (which is
    record): a name says what it is, in both halves."""
    known = modules()
    wrong = [w for name, path in known.items() for w in module_aliases(name, path, known)]
    assert wrong == []


def test_every_module_is_in_one_half():
    """A unit in neither list escapes the checks above (a reporting module importing it would
    pass unseen); one in both is in no one half."""
    tops = {unit(name) for name in modules()} - {""}
    layered = {m for layer in LAYERS for m in layer}
    assert sorted(tops - layered - JOB) == [], "add it to LAYERS or JOB_LAYERS"
    assert sorted(layered & JOB) == []
    assert sorted((layered | JOB) - tops) == [], "listed, but no such module"


def test_the_top_level_keeps_few_modules():
    """Shared words and small utilities live at the top; everything else in a folder."""
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def test_kernel_classification_is_shared_and_profiling_is_the_jobs():
    graph = imports()
    assert "job.spec" in graph["job.profiling"] and "kernels" in graph["job.profiling"]
    assert not {unit(t) for t in graph["kernels"]} & JOB
    assert _layer("job.profiling") is None and _layer("kernels") == 2


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.end_lineno - node.lineno + 1


@pytest.mark.parametrize("name", sorted(modules()))
def test_module_and_function_sizes(name):
    path = modules()[name]
    text = path.read_text()
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path}: {lines} lines"
    limit = MAX_REPORTING_FUNCTION_LINES if name.split(".")[0] in REPORTING \
        else MAX_FUNCTION_LINES
    long = [f"{fn} ({n} lines)" for fn, n in _functions(ast.parse(text)) if n > limit]
    assert long == [], f"{path}: over {limit} lines"


def test_the_size_walk_counts_every_function_from_def_to_last_line():
    """Methods, nested and async functions count, each from its ``def`` (decorators aside) to
    its last line, docstring and comments included."""
    body = "\n".join(f"    x{i} = {i}  # a comment" for i in range(7))
    source = (f"@decorated\ndef outer():\n    \"\"\"Doc.\"\"\"\n{body}\n"
              "    def inner():\n        return 1\n    return inner\n\n\n"
              "class C:\n    async def method(self):\n        await x\n        return 2\n")
    assert dict(_functions(ast.parse(source))) == {"outer": 12, "inner": 2, "method": 3}
