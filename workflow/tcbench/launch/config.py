"""The study configuration: checked once against its JSON Schema, defaults filled in from it.

The schema (``workflow/schemas/config.schema.yaml``) owns every type, enum, range and default;
``check`` is the one place that applies it, where the rules begin (the Snakefile). It reports
every violation as ``<key path>=<value>: <what is wrong>``, an experiment named by its name
as well as its place, e.g. ``experiments[0] (mine).batch_sizes[1]=0: 0 is less than the minimum
of 1``, and a name that is not known with the known ones closest to it
(``tcbench.cli.suggestion``: 'bf16' gets "(did you mean amp-bf16?)"); it raises ``ConfigError``
(each violation one of its ``mistakes``) before anything else looks at the config, and then
writes the schema's defaults into the config (so ``capacity.start`` or ``calibrate.size`` are
never restated in code). What a schema cannot say, the code that owns the concept checks
afterwards, and only that: the matrix (``tcbench.launch.matrix.expand``: duplicate names,
workload parameters, excludes that match nothing) and the capacity study (``tcbench.capacity.plan``: start <= max on the resolution's grid).

One difference from plain JSON Schema: an integer is an ``int``, not any number with no
fractional part (JSON Schema takes ``8.0`` as an integer; a batch size of ``8.0`` is a typo).
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

from ..cli import suggestion
from ..vocabulary import ConfigError

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"
MAX_REPORTED = 8  # a broken config can violate hundreds of rules; the first few say enough


def key_path(parts, config=None) -> str:
    """``['experiments', 0, 'batch_sizes', 1]`` -> ``experiments[0].batch_sizes[1]``, or with
    ``config`` ``experiments[0] (mine).batch_sizes[1]``: an experiment by its name (its
    workload's where it has none), as the matrix's messages name it."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
        if out.startswith("experiments[") and out.endswith("]") and out.count("[") == 1:
            out += experiment_label(config, p)
    return out or "(top level)"


def experiment_label(config, index) -> str:
    """`` (name)`` of ``config``'s experiment ``index``; empty where it has none to give."""
    try:
        exp = config["experiments"][index]
        name = exp.get("name", exp.get("workload"))
    except (TypeError, KeyError, IndexError, AttributeError):
        return ""
    return f" ({name})" if isinstance(name, str) else ""


def _short(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def describe(error, config=None) -> str:
    """One jsonschema ValidationError as ``key=value: reason``, in ``config`` (to name its
    experiments)."""
    path = list(error.absolute_path)
    where = key_path(path, config)
    value = error.instance
    kind = error.validator
    if kind == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(value) - set(known)) if isinstance(value, dict) else []
        return "; ".join(f"{key_path([*path, k], config)}={_short(value[k])}: unknown key"
                         f"{suggestion(k, known)}; known keys here: {', '.join(known)}"
                         for k in extra) or f"{where}: {error.message}"
    if kind == "required":
        missing = [k for k in error.validator_value if k not in value]
        return "; ".join(f"{key_path([*path, k], config)}: required key missing"
                         for k in missing)
    if kind == "uniqueItems":
        dupes = sorted({_short(v) for i, v in enumerate(value) if v in value[:i]})
        return f"{where}={_short(value)}: duplicate entries ({', '.join(dupes)})"
    if kind in ("pattern", "not") and isinstance(value, str):
        return (f"{where}={_short(value)}: use letters, digits, '.', '_' and '-' only, starting "
                f"with a letter or digit (no path separators, no '..')")
    if kind == "enum":
        return (f"{where}={_short(value)}: not one of "
                f"{', '.join(map(str, error.validator_value))}"
                f"{suggestion(value, error.validator_value) if isinstance(value, str) else ''}")
    if kind == "minItems" and not value:
        return f"{where}={_short(value)}: empty; list at least one"
    return f"{where}={_short(value)}: {error.message}"


@lru_cache(maxsize=4)
def _validator_class():
    import jsonschema

    base = jsonschema.Draft202012Validator
    strict_int = base.TYPE_CHECKER.redefine(
        "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool))
    return jsonschema.validators.extend(base, type_checker=strict_int)


@lru_cache(maxsize=4)
def load_schema(schema_path: Path = SCHEMA_PATH) -> dict:
    import yaml

    return yaml.safe_load(Path(schema_path).read_text())


def errors(config, schema: dict) -> list[str]:
    validator = _validator_class()(schema)
    found = sorted(validator.iter_errors(config),
                   key=lambda e: ([str(p) for p in e.absolute_path], e.validator))
    return list(dict.fromkeys(describe(e, config) for e in found))  # 'pattern' and 'not' can agree


def fill_defaults(instance, schema: dict):
    """Write the schema's ``default`` of every absent property into ``instance``, depth first
    (``calibrate: {}`` gets ``size: 8192`` and the rest). Only for an instance that validated:
    a default never hides an error."""
    if isinstance(instance, dict):
        for key, sub in schema.get("properties", {}).items():
            if key not in instance and "default" in sub:
                instance[key] = copy.deepcopy(sub["default"])
            if key in instance:
                fill_defaults(instance[key], sub)
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for item in instance:
            fill_defaults(item, schema["items"])
    return instance


def command_line_booleans(config: dict, schema: dict) -> None:
    """``--config require_gpu=false`` reaches the config as the text 'false' (Snakemake parses
    numbers only): a top-level boolean key given as true/false text becomes the boolean."""
    for key, prop in schema.get("properties", {}).items():
        value = config.get(key)
        if prop.get("type") == "boolean" and isinstance(value, str) \
                and value.lower() in ("true", "false"):
            config[key] = value.lower() == "true"


# What a study file says for itself or not at all: config/config.yaml's adaptive repeats (up to
# 10 processes a cell) are its own study's choice, and a config given over it (--configfile)
# that does not say otherwise runs exactly its `repeats` (docs/repeats.md says why).
OWN_KEYS = ("adaptive_repeats",)


def read_files(paths) -> list[dict]:
    """The config files ``paths`` (YAML or JSON, as Snakemake reads them), each as given."""
    import yaml

    return [yaml.safe_load(Path(p).read_text()) or {} for p in paths or ()]


def own_settings(config: dict, given: list[dict], overrides: dict | None = None) -> dict:
    """Drop from ``config`` (config/config.yaml with the files ``given`` on the command line
    merged over it, and ``overrides``: --config) each of OWN_KEYS that none of ``given`` nor
    ``overrides`` sets, so it takes the schema's default; nothing where no file was given
    over config/config.yaml. In place; returns ``config``."""
    if not given:
        return config
    said = [*given, overrides or {}]
    for key in OWN_KEYS:
        if not any(isinstance(d, dict) and key in d for d in said):
            config.pop(key, None)
    return config


def stop(exc: ConfigError, say) -> str:
    """A bad config's stop: each of its mistakes one plain line through ``say`` (the workflow's
    logger, so they head its output), and the error message that ends the run (Snakemake's
    header and traceback then add nothing to read)."""
    for mistake in exc.mistakes:
        say(f"invalid configuration: {mistake}")
    return (f"invalid configuration: {len(exc.mistakes)} mistake(s), each on a line above; no "
            "job was run")


def check(config: dict, schema_path: Path = SCHEMA_PATH) -> dict:
    """Raise ConfigError listing every schema violation of ``config``, each named key=value;
    otherwise fill in the schema's defaults (in place) and return ``config``."""
    schema = load_schema(Path(schema_path))
    command_line_booleans(config, schema)
    found = errors(config, schema)
    if found:
        shown = found[:MAX_REPORTED]
        if len(found) > MAX_REPORTED:
            shown[-1] += f" (and {len(found) - MAX_REPORTED} more)"
        raise ConfigError(*shown)
    return fill_defaults(config, schema)



def targets(config: dict, study_files=()) -> dict[str, dict]:
    """What each experiment should reach (its ``target``), by experiment name: this config's,
    then, for an experiment it does not run, the study file's that defines it (a result set
    holds several studies' records, and is rebuilt under whichever config is in force)."""
    found: dict[str, dict] = {}
    for doc in [config, *read_files(sorted(study_files))]:
        for e in (doc or {}).get("experiments") or ():
            name = e.get("name", e.get("workload")) if isinstance(e, dict) else None
            if name and "target" in e and name not in found:
                found[name] = e["target"]
    return found
