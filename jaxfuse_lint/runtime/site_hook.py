"""The `sitecustomize` that `jaxfuse-lint record` puts first on the child's PYTHONPATH.

`record` copies this file, as `sitecustomize.py`, into a temporary folder made in
the user's private folder (core/private_folder.py: no other user can re-create it
once `record` removed it);
Python imports it at startup in every process of the recorded command (and in
their subprocesses, which inherit PYTHONPATH). It:

1. runs the sitecustomize the environment already had, if any (the next one on
   sys.path), so that recording never disables the user's own site setup;
2. arms the recorder to be installed right after `jax` is imported: nothing is
   imported now, so processes that never use jax pay nothing.

It uses only the standard library until jax is imported, and must never raise.
"""
import importlib
import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain_existing_sitecustomize():
    me = sys.modules.get("sitecustomize")
    saved = list(sys.path)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
        sys.modules.pop("sitecustomize", None)
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    except Exception as exc:  # the user's sitecustomize failed: report it as Python would
        print(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: {exc}",
              file=sys.stderr)
    finally:
        sys.path[:] = saved
        if me is not None:
            sys.modules["sitecustomize"] = me


def _install_recorder():
    try:
        from jaxfuse_lint.runtime import recorder
    except ImportError:
        parent = os.environ.get("JAXFUSE_LINT_PACKAGE_PARENT")
        if not parent:
            return
        # jaxfuse-lint lives in another environment than the recorded Python: import it
        # from there without letting that environment shadow anything else.
        sys.path.append(parent)
        try:
            from jaxfuse_lint.runtime import recorder
        except ImportError:
            return
        finally:
            try:
                sys.path.remove(parent)
            except ValueError:
                pass
    try:
        recorder.install()
    except Exception as exc:
        print(f"jaxfuse-lint record: the recorder could not be installed: {type(exc).__name__}: {exc}",
              file=sys.stderr)


class _AfterJaxImport(importlib.abc.MetaPathFinder):
    """Runs the recorder's install once `import jax` has finished."""

    def find_spec(self, name, path=None, target=None):
        if name != "jax":
            return None
        sys.meta_path.remove(self)  # once: the other finders locate jax as usual
        spec = importlib.util.find_spec("jax")
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            _install_recorder()

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            return spec
        return spec


def _arm():
    if not os.environ.get("JAXFUSE_LINT_RECORD_PARTS"):
        return
    if "jax" in sys.modules:
        _install_recorder()
    else:
        sys.meta_path.insert(0, _AfterJaxImport())


_chain_existing_sitecustomize()
try:
    _arm()
except Exception as exc:  # never stop the user's interpreter from starting
    print(f"jaxfuse-lint record: {type(exc).__name__}: {exc}", file=sys.stderr)
