"""`python -m jaxfuse_lint.server`: the language server over stdio (what `jaxfuse-lint server` runs).

It starts the server directly, without the command line's click group; `--stdio` (the default
and only transport) is accepted as `jaxfuse-lint server --stdio` accepts it.
"""
import argparse

from jaxfuse_lint.server.server import serve

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m jaxfuse_lint.server",
                                     description="Run jaxfuse-lint as a Language Server over stdin/stdout.")
    parser.add_argument("--stdio", action="store_true",
                        help="Talk LSP over stdin/stdout (the default and only transport).")
    parser.parse_args()
    serve()
