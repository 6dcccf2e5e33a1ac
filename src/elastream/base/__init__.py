"""Foundations every layer may use: the name -> implementation registry and the settings style."""
