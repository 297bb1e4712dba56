"""jax's CUDA plugin (XLA:GPU) for jaxfuse-lint, in `SITE`: a folder that is not on the import path.

jaxfuse-lint's compiling commands append `SITE` to `sys.path` before they import jax, so that their
jax, and only theirs, finds the plugin (jaxfuse_lint/verify/backend.py).
"""
import os

SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")
