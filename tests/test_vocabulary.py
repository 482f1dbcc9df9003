"""The schemas repeat some of the vocabulary as enums (a schema must stand on its own); these
tests fail the moment the two disagree, so a new precision mode or axis value cannot be added
in one place and forgotten in the other."""

import json
import re
from pathlib import Path

import pytest
import yaml

from tcbench import vocabulary as V
from tcbench import workloads

SCHEMAS = Path(__file__).resolve().parents[1] / "workflow" / "schemas"
CONFIG = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text())
RECORD = json.loads((SCHEMAS / "record.schema.json").read_text())
EXPERIMENT = CONFIG["properties"]["experiments"]["items"]["properties"]


def words(enum):
    """An on/off axis's enum also lists YAML's booleans; the words are what count."""
    return [V.onoff(v) for v in dict.fromkeys(V.onoff(v) for v in enum)]


def test_precision_enums_are_the_modes_in_order():
    assert EXPERIMENT["precisions"]["items"]["enum"] == list(V.PRECISIONS)
    assert EXPERIMENT["exclude"]["items"]["properties"]["precision"]["enum"] == list(V.PRECISIONS)
    assert CONFIG["properties"]["capacity"]["properties"]["precisions"]["items"]["enum"] == \
        list(V.PRECISIONS)
    assert RECORD["properties"]["precision"]["enum"] == list(V.PRECISIONS)


def test_every_mode_has_its_own_name_and_colour():
    """Both are keys and legends: a repeated name would drop a mode from ``precision.MODES``
    and ``PALETTE`` without a word, a repeated colour would draw two modes alike."""
    assert len(set(V.PRECISIONS)) == len(V.MODES)
    assert V.PRECISIONS[0] == V.BASELINE
    colours = [m.colour for m in V.MODES]
    assert len(set(colours)) == len(colours)
    assert all(re.fullmatch(r"#[0-9A-F]{6}", c) for c in colours), colours


def test_status_enum_is_the_vocabulary():
    assert set(RECORD["properties"]["status"]["enum"]) == set(V.STATUSES)


@pytest.mark.parametrize("axis", [a for a in V.AXES if a.values is not None])
def test_axis_enums_are_the_vocabulary(axis):
    schema = EXPERIMENT["axes"]["properties"][axis.name]
    assert words(schema["items"]["enum"]) == list(axis.values)
    if axis.onoff:  # YAML 1.1 reads a bare off/on as a boolean: the schema must take both
        assert {False, True} & set(schema["items"]["enum"])


def test_every_axis_can_be_crossed_and_excluded():
    assert set(EXPERIMENT["axes"]["properties"]) == set(V.AXIS_NAMES)
    assert set(EXPERIMENT["exclude"]["items"]["properties"]) == \
        {"precision", "batch_size", *V.AXIS_NAMES}


def test_workload_enums_are_the_registry():
    assert EXPERIMENT["workload"]["enum"] == list(workloads.NAMES)
    assert RECORD["properties"]["workload"]["enum"] == list(workloads.NAMES)


def test_cell_keys_hold_every_axis_once():
    assert len(set(V.CELL_KEYS)) == len(V.CELL_KEYS)


def test_a_records_row_carries_every_cell_key(tiny_record, tmp_path):
    """The tables group by the cell keys found in the rows (``resultset``): a key the rows
    lack would merge cells that differ in it without a word."""
    import pandas as pd

    from tcbench import record as R
    from tcbench import resultset

    R.write(tiny_record, tmp_path / "r.json")
    row = resultset.tidy(resultset.load([tmp_path / "r.json"])).iloc[0]
    assert [k for k in V.CELL_KEYS if k not in row.index or pd.isna(row[k])] == []


def test_fp8_recipe_enum_is_the_modes_recipes():
    flags = RECORD["properties"]["precision_flags"]["oneOf"][1]["properties"]
    fp8 = flags["fp8"]["oneOf"][1]["properties"]
    assert fp8["recipe"]["enum"] == [m.fp8_recipe for m in V.MODES if m.fp8_recipe]


def test_compile_cache_outcome_is_one_rule():
    """The job writes it and the reader of older records derives it, both from here."""
    from tcbench.job import harness
    assert harness.compile_cache_outcome is V.compile_cache_outcome
    assert V.compile_cache_outcome({"fxgraph_cache_hit": 3}) == "hit"
    assert V.compile_cache_outcome({"fxgraph_cache_miss": 2, "fxgraph_cache_bypass": 1}) == "miss"
    assert V.compile_cache_outcome({"fxgraph_cache_hit": 1, "fxgraph_cache_bypass": 1}) == \
        "partial"
    assert V.compile_cache_outcome({}) == "none"


def test_measurement_params_are_the_common_defaults():
    """What a record's parameters say of its workload (``resultset.workload_params``) is what
    is left once the measurement's own are out: a parameter added to every workload and not
    here would read as a difference between two workloads."""
    assert set(V.MEASUREMENT_PARAMS) == set(workloads.COMMON_DEFAULTS)
    every = {k for name in workloads.NAMES for k in workloads.module(name).DEFAULTS}
    assert set(V.SCHEDULE_PARAMS) <= every


def _find(node, key):
    if isinstance(node, dict):
        if key in node:
            return node[key]
        node = list(node.values())
    if isinstance(node, list):
        for child in node:
            if (hit := _find(child, key)) is not None:
                return hit
    return None


def test_compile_cache_outcomes_are_the_record_schemas():
    cache = _find(RECORD, "compile_cache")
    assert _find(cache, "outcome")["enum"] == list(V.COMPILE_CACHE_OUTCOMES)
    assert V.UNCOMPILED not in V.COMPILE_CACHE_OUTCOMES


# -------------------------------------------------- status words, from the vocabulary only
PACKAGE = Path(__file__).resolve().parents[1] / "workflow" / "tcbench"


def status_literals(source: str) -> list[str]:
    """Where a source writes a record status as a string of its own: the value of a "status"
    key, an argument of ``finish``, or a comparison with something named status."""
    import ast

    def word(node):
        return node.value if isinstance(node, ast.Constant) and node.value in V.STATUSES \
            else None

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            found += [word(v) for k, v in zip(node.keys, node.values)
                      if isinstance(k, ast.Constant) and k.value == "status" and word(v)]
        elif isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            if any("status" in ast.unparse(p) for p in parts):
                found += [word(p) for p in parts if word(p)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "finish":
            found += [word(a) for a in node.args if word(a)]
    return found


def test_the_status_check_finds_a_literal_where_one_is_written():
    assert status_literals('x = {"status": "oom", "error": None}') == ["oom"]
    assert status_literals('bad = [r for r in rs if r["status"] != "ok"]') == ["ok"]
    assert status_literals('job.finish("unsupported", why)') == ["unsupported"]
    assert status_literals('x = {"status": V.OK}; y = d["error"]; z = r["ok"]') == []


def test_no_module_writes_a_status_word_of_its_own():
    wrong = {str(p.relative_to(PACKAGE)): found for p in sorted(PACKAGE.rglob("*.py"))
             if p.name != "vocabulary.py" and (found := status_literals(p.read_text()))}
    assert wrong == {}


# the least CIE76 distance (ΔE*ab) between two modes' colours: about 2.3 is the smallest
# difference a viewer notices side by side, a legend's swatch beside a bar needs far more;
# Okabe-Ito's blue and sky blue (fp32 and fp8-rowwise before) are 26 apart, its vermilion and
# orange (amp-fp16 and fp8-tensorwise before) 33
LEAST_COLOUR_DISTANCE = 40.0


def cie_lab(colour: str) -> tuple[float, float, float]:
    """sRGB (any matplotlib colour) to CIE L*a*b* under D65."""
    import matplotlib.colors

    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
           for c in matplotlib.colors.to_rgb(colour)]
    m = ((0.4124564, 0.3575761, 0.1804375), (0.2126729, 0.7151522, 0.0721750),
         (0.0193339, 0.1191920, 0.9503041))
    white = (0.95047, 1.0, 1.08883)
    x, y, z = (sum(a * b for a, b in zip(row, lin)) / w for row, w in zip(m, white))

    def f(t):
        return t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def colour_distance(a: str, b: str) -> float:
    return sum((p - q) ** 2 for p, q in zip(cie_lab(a), cie_lab(b))) ** 0.5


def test_colour_distance_is_cie76():
    """Reference values: white's L* is 100, black's 0, pure sRGB red's (53.24, 80.09, 67.20)."""
    assert cie_lab("#FFFFFF") == pytest.approx((100, 0, 0), abs=0.01)
    assert cie_lab("#000000") == pytest.approx((0, 0, 0), abs=0.01)
    assert cie_lab("#FF0000") == pytest.approx((53.24, 80.09, 67.20), abs=0.02)
    assert colour_distance("#0072B2", "#56B4E9") < LEAST_COLOUR_DISTANCE   # the old pair


def test_every_two_modes_are_told_apart_by_colour():
    """fp32 and fp8-rowwise, amp-fp16 and fp8-tensorwise once drew alike; each pair of modes
    must now lie ``LEAST_COLOUR_DISTANCE`` apart, and neither be the grey or black that the
    figures keep for intervals, run dots and not-judged cells."""
    close = [(a.name, b.name, round(colour_distance(a.colour, b.colour), 1))
             for i, a in enumerate(V.MODES) for b in V.MODES[i + 1:]
             if colour_distance(a.colour, b.colour) < LEAST_COLOUR_DISTANCE]
    assert close == []
    for m in V.MODES:
        _, a, b = cie_lab(m.colour)
        assert (a * a + b * b) ** 0.5 > 10, f"{m.name}'s colour {m.colour} is a grey"
