"""The `jaxfuse-lint server` command. pygls is imported only when the command runs."""
from __future__ import annotations

import sys

import click


@click.command("server", short_help="Run the language server (LSP over stdio) for editors.")
@click.option("--stdio", is_flag=True, help="Talk LSP over stdin/stdout (the default and only transport).")
def server_command(stdio: bool) -> None:
    """Run jaxfuse-lint as a Language Server over stdin/stdout.

    Editors start it and speak LSP to it: it publishes diagnostics as you type
    and save, offers each fix as a quick fix (plus `source.fixAll.jaxfuse-lint`
    for every safe fix), and shows a rule's documentation on hover. It reads
    pyproject.toml like `check` and never imports jax or your code.
    Needs the `server` extra: pip install 'jaxfuse-lint[server]'.
    """
    try:
        from jaxfuse_lint.server.server import serve
    except ImportError as exc:
        click.echo(f"jaxfuse-lint: error: the language server needs pygls and lsprotocol "
                   f"(pip install 'jaxfuse-lint[server]'): {exc}", err=True)
        sys.exit(2)
    serve()
