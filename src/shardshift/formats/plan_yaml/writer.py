"""The Plan itself as YAML: what `convert --to plan` writes. A value a framework's default set (a
resolved Plan, resolve.py) is followed by a comment `# default of <framework> <release>`, so that the
file tells what the source wrote from what its framework chose; the reader ignores comments."""

from __future__ import annotations

import io
import re

from shardshift.document import Conversion, Document, MappingEntry
from shardshift.plan import Plan, Section, to_data


def _data(section: Section, defaults: dict[str, str] | None = None, prefix: str = "") -> dict:
    """A section's fields as YAML data: unset fields and empty free-form dicts left out, an
    optional section that is set but empty kept as `{}`; free-form values (params, passthrough)
    exactly as they are, nulls included. `defaults`: dotted field -> the framework whose default it
    holds (`default of <framework> <release>`), written as a comment at the end of its line."""
    from ruamel.yaml.comments import CommentedMap

    out = CommentedMap()
    for name in section.FIELDS:
        value = getattr(section, name)
        if name in section.HIDDEN or value is None or value == {}:
            if not (isinstance(value, Section) and section.DEFAULTS[name] is None):
                continue
        key = "global" if name == "global_" else name
        if isinstance(value, Section):
            inner = _data(value, defaults, prefix + name + ".")
            if inner or section.DEFAULTS[name] is None:
                out[key] = inner
            else:
                continue
        else:
            out[key] = to_data(value)
        if defaults and prefix + name in defaults:
            out.yaml_add_eol_comment("# " + defaults[prefix + name], key)
    return out


def _defaults(plan: Plan) -> dict[str, str]:
    """dotted field -> `default of <framework> <release>` for every field a framework's default set
    (a resolved Plan: resolve.is_default)."""
    from shardshift.resolve import is_default

    return {dotted: where.pointer for dotted, where in plan.provenance.items() if is_default(where)}


def write(plan: Plan) -> str:
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import RoundTripRepresenter

    # A subclass of its own: add_representer on ruamel's class would change how every other YAML
    # writer in the process (formats/yaml_write.py) quotes strings.
    class PlanRepresenter(RoundTripRepresenter):
        pass

    PlanRepresenter.add_representer(float, _float)
    PlanRepresenter.add_representer(str, _str)
    yaml = YAML()
    yaml.Representer = PlanRepresenter
    yaml.default_flow_style = False
    stream = io.StringIO()
    yaml.dump(_data(plan, _defaults(plan)), stream)
    # two spaces before every comment (ruamel aligns a comment after the previous one's column, or not at all)
    return re.sub(r"(?m)(\S) (# default of )", r"\1  \2", stream.getvalue())


def _str(representer, value: str):
    """Strings with a YAML line break other than \\n (NEL, LS, PS, CR) or a control character are
    double-quoted, where they are escaped: in plain or single-quoted style a loader folds them."""
    if any(c in "\x85\u2028\u2029\r" or (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0
           for c in value):
        return representer.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    from shardshift.yaml11 import IMPLICIT

    if any(pattern.match(value) for _, pattern in IMPLICIT):  # `NO`, `on`, `1:30`: not strings to YAML 1.1
        return representer.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return representer.represent_str(value)


def _float(representer, value: float):
    """A float every YAML loader reads as one: YAML 1.1 (PyYAML) needs a dot in `1.0e-05`."""
    import math

    if math.isnan(value):
        text = ".nan"
    elif math.isinf(value):
        text = ".inf" if value > 0 else "-.inf"
    else:
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        if "e" in text and text.split("e")[1][0] not in "+-":
            mantissa, exponent = text.split("e")
            text = f"{mantissa}e+{exponent}"
    return representer.represent_scalar("tag:yaml.org,2002:float", text)


def convert(document: Document) -> Conversion:
    """The Plan as YAML, with each source setting's place in it: the Plan field(s) its provenance
    names, else the format's passthrough (which keeps the rest as written)."""
    if document.plan is None:
        raise ValueError(f"{document.path} has no Plan to write")
    plan = document.plan
    entries = []
    for pointer, line, column in document.settings():
        fields = sorted(dotted for dotted, where in plan.provenance.items()
                        if where.pointer == pointer and where.line == line and where.file == document.path)
        if fields:
            entries.append(MappingEntry(pointer, line, column, "exact", ", ".join(fields),
                                        "the Plan field of the same meaning"))
        else:
            entries.append(MappingEntry(pointer, line, column, "exact", "plan",
                                        "held by the Plan (a typed field or the format's passthrough)"))
    return Conversion(write(plan), entries)
