"""What `pip install .` ships: the tool's packages under its own name, none at the top level
but `jaxfuse_lint` (a generic `codemods` would clash with a user's package of that name)."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_a_package():
    """`packages.find` ships folders with an `__init__.py`: a folder of modules without one would be left out."""
    pkg = ROOT / "jaxfuse_lint"
    for folder in [pkg, *(d for d in pkg.rglob("*") if d.is_dir() and d.name != "__pycache__")]:
        if any(folder.glob("*.py")):
            assert (folder / "__init__.py").is_file(), folder


def test_the_codemods_import_under_the_tools_name():
    import jaxfuse_lint.codemods as codemods
    from jaxfuse_lint.codemods import fixer_for

    assert Path(codemods.__file__).resolve() == ROOT / "jaxfuse_lint" / "codemods" / "__init__.py"
    assert fixer_for("JF101") is not None


def test_the_wheel_has_no_top_level_codemods_and_its_imports_work(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
                           str(ROOT)], capture_output=True, text=True)
    if proc.returncode != 0 and any(s in proc.stderr for s in ("Could not find a version", "Failed to establish",
                                                                 "No matching distribution")):
        pytest.skip(f"no build backend to be had here: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("jaxfuse_lint-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"jaxfuse_lint"}
    assert "jaxfuse_lint/codemods/jf101_unroll_reduction.py" in names
    # The `gpu` extra requires xla-gpu/ (by an absolute file URL), never jax's CUDA plugin by name: pip
    # would install that where every `import jax` of the environment loads it (tests/test_gpu_extra.py).
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    gpu = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:") and 'extra == "gpu"' in line]
    assert any(f"jaxfuse-lint-xla-gpu @ {(ROOT / 'xla-gpu').as_uri()}" in line for line in gpu), gpu
    assert not any("cuda" in line.split("@")[0] for line in gpu), gpu
    # Installed (no checkout around it), the engine finds every codemod under the tool's name.
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import jaxfuse_lint.codemods as c; "
            "from jaxfuse_lint.engine.pipeline import fix_source; from jaxfuse_lint.core.config import Settings; "
            "print(c.__file__); print(fix_source('import jax\\n@jax.jit\\ndef f(x):\\n    print(x)\\n', "
            "'m.py', Settings()).source)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, cwd=tmp_path,
                         env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    first, rest = run.stdout.split("\n", 1)
    assert first == str(target / "jaxfuse_lint" / "codemods" / "__init__.py")
    assert "jax.debug.print" in rest
