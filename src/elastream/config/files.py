"""Reading the settings files of a run: the pipeline YAML and the run settings, with file:line."""

from __future__ import annotations

from pathlib import Path

from elastream.base.settings import SettingsError, YamlSyntaxError, read_yaml
from elastream.model.pipeline import Pipeline, TopologyError, pipeline_from_dict


def load_pipeline(path: str | Path) -> Pipeline:
    """Read a pipeline from a YAML file (format: docs/pipeline-yaml.md); errors name the line."""
    try:
        data = read_yaml(path, "pipeline file")
    except YamlSyntaxError as exc:
        raise TopologyError(
            f"{exc.origin}: not valid YAML at line {exc.line} ({exc.problem})"
        ) from None
    except SettingsError as exc:
        raise TopologyError(str(exc)) from None
    return pipeline_from_dict(data, str(path))
