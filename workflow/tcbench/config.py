"""The study configuration against its JSON schema, with messages a person can act on.

jsonschema's own messages name the value but not always the key ("0 is less than the minimum
of 1"), and Snakemake's ``validate`` adds the whole schema to them. ``check`` reports every
violation as ``<key path>=<value>: <what is wrong>``, e.g.
``experiments[0].batch_sizes[1]=0: 0 is less than the minimum of 1``, and raises
``ConfigError`` before anything else looks at the config. The Snakefile then still calls
Snakemake's ``validate``, which fills in the schema's defaults.
"""

from __future__ import annotations

from pathlib import Path

from .vocabulary import ConfigError

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml"
MAX_REPORTED = 8  # a broken config can violate hundreds of rules; the first few say enough


def key_path(parts) -> str:
    """``['experiments', 0, 'batch_sizes', 1]`` -> ``experiments[0].batch_sizes[1]``."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _short(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def describe(error) -> str:
    """One jsonschema ValidationError as ``key=value: reason``."""
    path = list(error.absolute_path)
    where = key_path(path)
    value = error.instance
    kind = error.validator
    if kind == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(value) - set(known)) if isinstance(value, dict) else []
        return "; ".join(f"{key_path([*path, k])}={_short(value[k])}: unknown key; known keys "
                         f"here: {', '.join(known)}" for k in extra) or f"{where}: {error.message}"
    if kind == "required":
        missing = [k for k in error.validator_value if k not in value]
        return "; ".join(f"{key_path([*path, k])}: required key missing" for k in missing)
    if kind == "uniqueItems":
        dupes = sorted({_short(v) for i, v in enumerate(value) if v in value[:i]})
        return f"{where}={_short(value)}: duplicate entries ({', '.join(dupes)})"
    if kind in ("pattern", "not") and isinstance(value, str):
        return (f"{where}={_short(value)}: use letters, digits, '.', '_' and '-' only, starting "
                f"with a letter or digit (no path separators, no '..')")
    if kind == "enum":
        return f"{where}={_short(value)}: not one of {', '.join(map(str, error.validator_value))}"
    if kind == "minItems" and not value:
        return f"{where}={_short(value)}: empty; list at least one"
    return f"{where}={_short(value)}: {error.message}"


def errors(config, schema: dict) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    found = sorted(validator.iter_errors(config),
                   key=lambda e: ([str(p) for p in e.absolute_path], e.validator))
    return list(dict.fromkeys(describe(e) for e in found))  # 'pattern' and 'not' can agree


def check(config, schema_path: Path = SCHEMA_PATH) -> None:
    """Raise ConfigError listing every schema violation of ``config``, each named key=value."""
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text())
    found = errors(config, schema)
    if found:
        more = f" (and {len(found) - MAX_REPORTED} more)" if len(found) > MAX_REPORTED else ""
        raise ConfigError("; ".join(found[:MAX_REPORTED]) + more)
