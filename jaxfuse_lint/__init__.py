"""jaxfuse-lint: a source-to-source rewriting linter for JAX."""

__version__ = "0.1.0"
