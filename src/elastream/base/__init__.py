"""Foundations every layer may use: the name -> implementation registry, the settings style and
small shared helpers (Kahn's order, distinct values of arrays)."""
