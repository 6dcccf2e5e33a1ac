"""Example applications: operator functions and event generators."""
