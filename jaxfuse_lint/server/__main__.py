"""`python -m jaxfuse_lint.server`: the language server over stdio (what `jaxfuse-lint server` runs)."""
from jaxfuse_lint.cli.server import server_command

if __name__ == "__main__":
    server_command(prog_name="jaxfuse-lint server")
