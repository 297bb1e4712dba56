"""Shared types and settings, the bottom layer: diagnostics and edits, configuration, targets' claims,
the profile format, atomic writes, the tool's fingerprint. Imports nothing else of the package."""
