"""The tool's version: one place that everything, low layers included, reads it from."""

__version__ = "0.1.0"
