"""Example applications: operator functions and source generators for the demo and tests."""
