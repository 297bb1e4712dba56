"""The `jaxfuse-lint server` command. pygls is imported only when the command runs (it is slow to import)."""
from __future__ import annotations

import click


@click.command("server", short_help="Run the language server (LSP over stdio) for editors.")
@click.option("--stdio", is_flag=True, help="Talk LSP over stdin/stdout (the default and only transport).")
def server_command(stdio: bool) -> None:
    """Run jaxfuse-lint as a Language Server over stdin/stdout.

    Editors start it and speak LSP to it: it publishes diagnostics as you type
    and save, offers each fix as a quick fix (plus `source.fixAll.jaxfuse-lint`
    for every safe fix), and shows a rule's documentation on hover. It reads
    pyproject.toml like `check` and never imports jax or your code.
    Notebooks are synced cell by cell (LSP notebook document sync).
    """
    from jaxfuse_lint.server.server import serve

    serve()
