"""jaxfuse-lint: a source-to-source rewriting linter for JAX.

In a notebook: `jaxfuse_lint.show(fn, *args)` and `jaxfuse_lint.compare(f, g, *args)`
(see `jaxfuse_lint.runtime.notebook`), and `%load_ext jaxfuse_lint` for the
`%%jaxfuse_lint` cell magic. Importing this package stays cheap: jax is
imported only when `show` or `compare` is first called.
"""

from jaxfuse_lint.core.version import __version__  # noqa: F401  (`jaxfuse_lint.__version__`)

_NOTEBOOK_API = ("show", "compare")


def __getattr__(name: str):
    # Lazy, so that `import jaxfuse_lint` (and `check`) never pulls in jax or the verifier.
    if name in _NOTEBOOK_API:
        from jaxfuse_lint.runtime import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'jaxfuse_lint' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_NOTEBOOK_API])


def load_ipython_extension(ipython) -> None:
    """`%load_ext jaxfuse_lint`: register the `%%jaxfuse_lint` cell magic."""
    from jaxfuse_lint.runtime.magic import register

    register(ipython)
