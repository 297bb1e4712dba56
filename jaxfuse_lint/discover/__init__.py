"""Discover: paths -> the source files to check (and what was left out, and why)."""
