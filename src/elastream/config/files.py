"""Reading the settings files of a run: the pipeline YAML and the run settings, with file:line."""

from __future__ import annotations

import sys
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
    return pipeline_from_dict(data, str(path)).read_from(Path(path).resolve().parent)


def app_folders(pipeline: Pipeline) -> list[Path]:
    """The folders a pipeline's own Python modules are imported from: its file's folder (when
    it was read from one), then the working directory."""
    folders = [pipeline.folder] if pipeline.folder is not None else []
    return list(dict.fromkeys([*folders, Path.cwd().resolve()]))


def make_importable(pipeline: Pipeline) -> list[Path]:
    """Put the pipeline's `app_folders` first on this process's import path (as Python does with
    a script's folder); returns them. The Spark runtime ships them to its Python workers."""
    folders = app_folders(pipeline)
    for folder in reversed(folders):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    return folders
