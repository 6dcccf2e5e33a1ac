"""Input rates over time: trace loaders, generators and their rescaling."""

from elastream.workloads.covid import covid_selection
from elastream.workloads.generators import GENERATORS, demo_trace
from elastream.workloads.loaders import (
    FORMATS,
    LoadInfo,
    detect_format,
    load_trace,
    load_trace_info,
)
from elastream.workloads.resolve import (
    default_data_dir,
    describe_generators,
    generator_parameters,
    parse_generator_spec,
    resolve_trace,
    resolve_trace_info,
)
from elastream.workloads.trace import Trace, TraceError, TraceStats

__all__ = [
    "FORMATS",
    "GENERATORS",
    "LoadInfo",
    "Trace",
    "TraceError",
    "TraceStats",
    "covid_selection",
    "default_data_dir",
    "demo_trace",
    "describe_generators",
    "detect_format",
    "generator_parameters",
    "load_trace",
    "load_trace_info",
    "parse_generator_spec",
    "resolve_trace",
    "resolve_trace_info",
]
