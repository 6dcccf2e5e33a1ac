"""Typed settings: one pydantic style, one YAML reader with file:line errors, --describe."""
