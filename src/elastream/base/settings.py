"""One settings style: frozen pydantic models with a description on every field, one YAML reader
whose errors name the file, the line and the setting, and `describe()` for `elastream config`."""

from __future__ import annotations

import types
import typing
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


class SettingsError(ValueError):
    """A broken settings file or value; the message names the file, the line and the setting."""


class YamlSyntaxError(SettingsError):
    """A file that is not valid YAML: where (file, line) and what the parser says."""

    def __init__(self, origin: str, line: int | str, problem: str | None) -> None:
        super().__init__(f"{origin}:{line}: not valid YAML ({problem})")
        self.origin, self.line, self.problem = origin, line, problem


class RenamedSettingWarning(FutureWarning):
    """A setting given by its old name, accepted for one more release."""


def warn_renamed(old: str, new: str, what: str = "setting") -> None:
    """The one-line notice that a setting's (or an option's) old name was used."""
    warnings.warn(
        f"{what} {old!r} is now called {new!r}; the old name is accepted until the next release",
        RenamedSettingWarning,
        stacklevel=3,
    )


def accept_old_names(data: Any, renamed: Mapping[str, str]) -> Any:
    """`data` with each old setting name replaced by its new one (line numbers kept), and a
    warning per old name; an old and a new name given together is an error."""
    if not isinstance(data, Mapping) or not renamed.keys() & data.keys():
        return data
    out = LineMap()
    out.line, out.lines = getattr(data, "line", 0), {}
    lines = getattr(data, "lines", {})
    for key, value in data.items():
        new = renamed.get(key, key)
        if new != key:
            if new in data:
                raise ValueError(f"{key!r} is the old name of {new!r}: give only {new!r}")
            warn_renamed(key, new)
        out[new] = value
        if key in lines:
            out.lines[new] = lines[key]
    return out


def refuse_old_names(data: Any, renamed: Mapping[str, str]) -> None:
    """A renamed setting's old name is an error naming the new one (one name per setting)."""
    if not isinstance(data, Mapping):
        return
    for key in data:
        if key in renamed:
            raise RenamedSettingError(key, renamed[key])


class RenamedSettingError(ValueError):
    """A setting given by a name it no longer has; the message names the new one."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__(f"{old!r} is an old name: the setting is now called {new!r}")
        self.old, self.new = old, new


class Settings(BaseModel):
    """Base of every settings model: frozen, unknown keys rejected, every field described; a
    renamed setting's old name (`renamed`: old -> new) is an error naming the new one."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    renamed: ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        refuse_old_names(data, cls.renamed)
        return data


M = TypeVar("M", bound=BaseModel)


# ---------------------------------------------------------------------------- YAML with lines


class LineMap(dict):
    """A YAML mapping that remembers the line of each key (1-based) and its own line."""

    line: int = 0
    lines: dict[Any, int]


class LineList(list):
    """A YAML sequence that remembers the line of each item (1-based) and its own line."""

    line: int = 0
    lines: list[int]


class _LineLoader(yaml.SafeLoader):
    """SafeLoader whose mappings and sequences carry line numbers for error messages."""


def _mapping(loader: _LineLoader, node: yaml.MappingNode) -> LineMap:
    loader.flatten_mapping(node)
    out = LineMap()
    out.line, out.lines = node.start_mark.line + 1, {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if key in out:
            raise SettingsError(f"{loader.name}:{line}: duplicate key {key!r}")
        out[key] = loader.construct_object(value_node, deep=True)
        out.lines[key] = line
    return out


def _sequence(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(item, deep=True) for item in node.value)
    out.line, out.lines = (
        node.start_mark.line + 1,
        [item.start_mark.line + 1 for item in node.value],
    )
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def load_yaml(text: str, origin: str) -> Any:
    """Parse YAML keeping line numbers; errors name `origin` and the line."""
    loader = _LineLoader(text)
    loader.name = origin
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise YamlSyntaxError(origin, line, exc.problem) from None
    finally:
        loader.dispose()


def read_yaml(path: str | Path, what: str) -> Any:
    """The YAML document of a file, with line numbers; a missing file is named as `what`."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SettingsError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise SettingsError(f"{what} {path}: cannot read it ({exc.strerror})") from None
    return load_yaml(text, str(path))


def line_of(data: Any, loc: Sequence[Any]) -> int | None:
    """The line of the deepest element of `loc` (a pydantic error location) found in `data`."""
    line = getattr(data, "line", None)
    node = data
    for part in loc:
        found = (isinstance(node, LineMap) and part in node) or (
            isinstance(node, LineList) and isinstance(part, int) and 0 <= part < len(node)
        )
        if not found:
            break
        line, node = node.lines[part], node[part]
    return line


# ---------------------------------------------------------------------------- validation


def _nested_models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The pydantic models an annotation refers to (through Optional, list[...], dict[..., ...])."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _nested_models(arg)


def field_paths(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every setting's dotted path in a model tree (lists and dicts of models included)."""
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        yield path
        for nested in _nested_models(info.annotation):
            yield from field_paths(nested, f"{path}.")


def belongs_at(model: type[BaseModel], key: str) -> list[str]:
    """Where in the model tree a setting called `key` is accepted."""
    return [p for p in field_paths(model) if p.rsplit(".", 1)[-1] == key]


_BOUNDS = {
    "greater_than": ">",
    "greater_than_equal": ">=",
    "less_than": "<",
    "less_than_equal": "<=",
}


def requirement(err: Any) -> str:
    """What a pydantic error asks for, without the setting's name: `must be > 0, got -1`."""
    kind = err["type"]
    if kind in _BOUNDS:
        limit = next(iter(err.get("ctx", {}).values()), "?")
        return f"must be {_BOUNDS[kind]} {limit}, got {err['input']!r}"
    if kind == "value_error":
        return str(err["ctx"]["error"])
    return str(err["msg"])


def plain_message(err: Any) -> str:
    """A pydantic error as a sentence naming the setting: `td must be > 0, got -1`."""
    if err["type"] == "value_error":
        return requirement(err)
    name = ".".join(str(p) for p in err["loc"]) or "value"
    separator = " " if err["type"] in _BOUNDS else ": "
    return f"{name}{separator}{requirement(err)}"


def _message(model: type[BaseModel], err: Any) -> str:
    if err["type"] != "extra_forbidden":
        return str(err["msg"])
    key = str(err["loc"][-1])
    places = belongs_at(model, key)
    if places:
        return f"{err['msg']}: {key!r} does nothing here, it belongs at {' or '.join(places)}"
    return f"{err['msg']} (unknown setting {key!r})"


def validate(model: type[M], data: Any, origin: str, *, context: Any = None) -> M:
    """Validate plain (or line-numbered) data into `model`; every problem is one line that names
    `origin`, the line (when known) and the setting, and a misplaced key says where it belongs."""
    try:
        refuse_old_names(data, getattr(model, "renamed", {}))
        return model.model_validate(data, context=context)
    except RenamedSettingError as exc:
        line = line_of(data, [exc.old])
        raise SettingsError(f"{origin}:{line}: {exc}") from None
    except ValueError as exc:
        if not isinstance(exc, ValidationError):
            raise SettingsError(f"{origin}: {exc}") from None
        problems = []
        for err in exc.errors():
            loc = err["loc"]
            line = line_of(data, loc)
            where = f"{origin}:{line}" if line else origin
            path = ".".join(str(p) for p in loc) or "(top level)"
            problems.append(f"{where}: {path}: {_message(model, err)}")
        raise SettingsError("\n".join(problems)) from None


def read_settings(model: type[M], path: str | Path, what: str) -> M:
    """Read and validate a settings file (an empty file gives the defaults)."""
    try:
        data = read_yaml(path, what)
    except SettingsError as exc:
        raise SettingsError(f"cannot read {what} {path}: {exc}") from None
    if data is None:
        data = LineMap()
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a mapping of {what}")
    return validate(model, data, str(path))


# ---------------------------------------------------------------------------- describe


@dataclass(frozen=True, slots=True)
class Option:
    """One setting as `elastream config --describe` prints it."""

    path: str
    type: str
    default: str
    description: str


def _type_name(annotation: Any) -> str:
    """A readable type: `float > 0`, `dict[str, float > 0]`, `int | None` (constraints of an
    Annotated type written after it, no pydantic internals)."""
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        bounds = [_bound(m) for extra in extras for m in getattr(extra, "metadata", [extra])]
        return " ".join([_type_name(base), *(b for b in bounds if b)])
    if annotation is type(None):
        return "None"
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is not None and args:
        inner = ", ".join("..." if a is Ellipsis else _type_name(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    return str(annotation).replace("typing.", "")


_FIELD_BOUNDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def _bound(constraint: Any) -> str:
    """`> 0` for pydantic's Gt(gt=0) and the like; '' for other metadata."""
    for attr, sign in _FIELD_BOUNDS.items():
        if getattr(constraint, attr, None) is not None:
            return f"{sign} {getattr(constraint, attr)}"
    return ""


def default_text(info: Any) -> str:
    """A field's default as `config --describe` prints it."""
    if info.default is not PydanticUndefined:
        value = info.default
    elif info.default_factory is not None:
        value = info.default_factory()
    else:
        return "(required)"
    if isinstance(value, BaseModel):
        value = value.model_dump()
    return str(value) if isinstance(value, Path) else repr(value)


def _field_type(info: FieldInfo) -> str:
    """A field's readable type with its bounds: `float > 0`, `int >= 1 | None`."""
    bounds = " ".join(b for b in map(_bound, info.metadata) if b)
    args = typing.get_args(info.annotation)
    if bounds and type(None) in args:
        kinds = " | ".join(_type_name(a) for a in args if a is not type(None))
        return f"{kinds} {bounds} | None"
    return f"{_type_name(info.annotation)} {bounds}".rstrip()


def describe(model: type[BaseModel], prefix: str = "") -> list[Option]:
    """Every setting of a model tree with its type, default and description; an optional group
    of settings (`spark.leasing: LeasingSettings | None`) is listed, then each of its fields."""
    out: list[Option] = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        nested = list(_nested_models(info.annotation))
        if nested and isinstance(info.annotation, type):
            out.extend(describe(nested[0], f"{path}."))
            continue
        out.append(Option(path, _field_type(info), default_text(info), info.description or ""))
        if len(nested) == 1 and _optional(info.annotation):
            out.extend(describe(nested[0], f"{path}."))
    return out


def _optional(annotation: Any) -> bool:
    """`X | None` with X one type (not a list or a mapping of it)."""
    args = typing.get_args(annotation)
    union = isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
    plain = all(typing.get_origin(a) is None for a in args)  # not list[X], dict[K, X]
    return union and plain and len(args) == 2 and type(None) in args


def undescribed(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Settings of a model tree without a description (a test keeps this list empty)."""
    missing = []
    for name, info in model.model_fields.items():
        if not info.description:
            missing.append(f"{prefix}{name}")
        for nested in _nested_models(info.annotation):
            missing.extend(undescribed(nested, f"{prefix}{name}."))
    return missing
