"""Turn a workload spec (a trace file path or `generator:key=value,...`) into a Trace."""

from __future__ import annotations

import inspect
from pathlib import Path

from elastream.workloads.generators import GENERATORS
from elastream.workloads.loaders import LoadInfo, load_trace_info
from elastream.workloads.trace import Trace, TraceError

DEFAULT_DATA_DIR = Path("../shared/data")  # the real traces, read by path (never copied)


def default_data_dir() -> Path | None:
    """`../shared/data` next to the current directory or next to the repository, if present."""
    repo_root = next(
        (p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file()), None
    )
    roots = [Path.cwd()] + ([repo_root] if repo_root else [])
    for root in roots:
        candidate = (root / DEFAULT_DATA_DIR).resolve()
        if candidate.is_dir():
            return candidate
    return None


def generator_parameters(name: str) -> dict[str, object]:
    """A generator's parameters and their defaults."""
    signature = inspect.signature(GENERATORS.get(name))
    return {p.name: p.default for p in signature.parameters.values()}


def describe_generators() -> str:
    """One line per generator: `name: key=default, ...`."""
    return "\n".join(
        f"{name}: " + ", ".join(f"{k}={v}" for k, v in generator_parameters(name).items())
        for name in GENERATORS.names()
    )


def parse_generator_spec(spec: str) -> tuple[str, dict[str, float | int]]:
    """`name` or `name:key=value,key=value` -> (name, typed keyword arguments).

    Values are numbers; a parameter whose default is an integer takes integers only."""
    name, _, rest = spec.partition(":")
    name = name.strip()
    if name not in GENERATORS:
        raise TraceError(
            f"unknown generator {name!r} in {spec!r} (known: {', '.join(GENERATORS.names())})"
        )
    known = generator_parameters(name)
    kwargs: dict[str, float | int] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, text = (s.strip() for s in item.partition("="))
        if not eq or not key:
            raise TraceError(f"{name}: expected key=value, got {item!r}")
        if key not in known:
            valid = ", ".join(f"{k} (default {v})" for k, v in known.items())
            raise TraceError(f"{name}: unknown parameter {key!r} (valid: {valid})")
        if key in kwargs:
            raise TraceError(f"{name}: parameter {key!r} given twice")
        kwargs[key] = _typed_value(name, key, text, known[key])
    return name, kwargs


def _typed_value(generator: str, key: str, text: str, default: object) -> float | int:
    try:
        return int(text) if isinstance(default, int) else float(text)
    except ValueError:
        kind = "an integer" if isinstance(default, int) else "a number"
        raise TraceError(f"{generator}: parameter {key!r} must be {kind}, got {text!r}") from None


def generate(spec: str) -> Trace:
    """Run the generator a spec names, with the trace named after the spec."""
    name, kwargs = parse_generator_spec(spec)
    trace = GENERATORS.get(name)(**kwargs)
    label = name + (f"({','.join(f'{k}={v:g}' for k, v in kwargs.items())})" if kwargs else "")
    return Trace(trace.rates, trace.step_s, label)


def find_trace_file(spec: str, data_dir: Path | None) -> Path | None:
    """The file a spec names: as given, else under `data_dir` or one of its sub-folders."""
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    if data_dir is None or path.is_absolute():
        return None
    data_dir = Path(data_dir)
    folders = (
        [data_dir, *sorted(p for p in data_dir.iterdir() if p.is_dir())]
        if data_dir.is_dir()
        else []
    )
    return next((folder / path for folder in folders if (folder / path).is_file()), None)


def resolve_trace(
    spec: str, data_dir: Path | None = None, *, fmt: str | None = None, bin_s: float = 1.0
) -> Trace:
    """A trace file (found as given or under `data_dir`, default `default_data_dir()`) or a
    generator spec such as `spike:peak=300,onset=60`. `fmt` forces a file format and `bin_s`
    sets the bin for event logs (see `load_trace`)."""
    return resolve_trace_info(spec, data_dir, fmt=fmt, bin_s=bin_s)[0]


def resolve_trace_info(
    spec: str, data_dir: Path | None = None, *, fmt: str | None = None, bin_s: float = 1.0
) -> tuple[Trace, LoadInfo | None]:
    """`resolve_trace`, also returning how a file was read (None for a generator)."""
    spec = spec.strip()
    if not spec:
        raise TraceError("empty workload spec: give a trace file or a generator spec")
    name = spec.partition(":")[0].strip()
    if name in GENERATORS and not Path(spec).is_file():
        return generate(spec), None
    data_dir = data_dir if data_dir is not None else default_data_dir()
    path = find_trace_file(spec, data_dir)
    if path is not None:
        return load_trace_info(path, fmt, bin_s=bin_s)
    if ":" in spec and "/" not in name:
        parse_generator_spec(spec)  # raises: unknown generator, listing the known ones
    where = f" (also looked under {data_dir})" if data_dir is not None else ""
    raise FileNotFoundError(
        f"{spec!r} is neither a trace file{where} nor a generator "
        f"(known generators: {', '.join(GENERATORS.names())})"
    )
