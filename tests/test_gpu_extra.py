"""The `gpu` extra's XLA:GPU compiler is jaxfuse-lint's, not the environment's.

It installs jax's CUDA plugin off the import path (xla-gpu/, the `jaxfuse-lint-xla-gpu` distribution):
a user's `import jax` prints and behaves as with jax alone, and the compiling commands register the
plugin with their own jax and compile with XLA:GPU without a GPU.

Where the plugin was installed the usual way (an environment set up before, or `jax[cuda12]`), jax
itself loads it; `a_gpu_extra_environment` then builds the extra's layout from the same files: a
folder of links to the environment's packages without the plugin, run with `python -S`, and the plugin
under a `jaxfuse_lint_xla_gpu` of its own.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from jaxfuse_lint.verify import backend

ROOT = Path(__file__).resolve().parent.parent
SUM = ROOT / "fixtures" / "proofs" / "sum_reduction.py"
PLUGIN_NAMES = re.compile(r"jax_plugins|jax_cuda\d+_(plugin|pjrt)(-.*\.dist-info)?")

pytest.importorskip("jax")


def _plugin_folders() -> list[Path]:
    """Where this environment's CUDA plugin files are: `jax_plugins/xla_cudaN` and `jax_cudaN_plugin`."""
    site = backend._xla_gpu_site()
    if site is not None:
        return [Path(site) / "jax_plugins", *Path(site).glob("jax_cuda*_plugin")]
    spec = importlib.util.find_spec("jax_plugins")
    if spec is None or not backend._cuda_plugins():
        return []
    folders = [Path(p) for p in spec.submodule_search_locations]
    for name in ("jax_cuda13_plugin", "jax_cuda12_plugin"):
        found = importlib.util.find_spec(name)
        if found is not None and found.origin:
            folders.append(Path(found.origin).parent)
    return folders


needs_the_plugin = pytest.mark.skipif(not _plugin_folders(), reason="jax's CUDA plugin is not installed here")


def clean_env(**extra: str) -> dict[str, str]:
    return {"PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin", "HOME": os.environ.get("HOME", "/"),
            **extra}


@pytest.fixture(scope="module")
def a_gpu_extra_environment(tmp_path_factory):
    """(python command, environment) of an environment laid out as the `gpu` extra installs it."""
    base = tmp_path_factory.mktemp("gpu-extra")
    packages = base / "site-packages"
    packages.mkdir()
    site_packages = Path(sysconfig.get_paths()["purelib"])
    for entry in site_packages.iterdir():
        if not PLUGIN_NAMES.fullmatch(entry.name) and not entry.name.startswith("jaxfuse_lint_xla_gpu"):
            (packages / entry.name).symlink_to(entry)
    extra = packages / "jaxfuse_lint_xla_gpu"
    (extra / "site").mkdir(parents=True)
    (extra / "__init__.py").write_text(
        "import os\nSITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'site')\n")
    for folder in _plugin_folders():
        (extra / "site" / folder.name).symlink_to(folder)
    env = clean_env(PYTHONPATH=f"{ROOT}:{packages}")
    return [sys.executable, "-S"], env


@pytest.mark.skipif(bool(backend._cuda_plugins()),
                    reason="jax's CUDA plugin is installed where jax loads it (jax[cuda12], or an environment set up "
                           "before the gpu extra kept it apart): a_gpu_extra_environment checks that layout")
def test_import_jax_here_is_jax_alone():
    """This environment (CI's is a fresh `pip install -e ".[test,gpu]"`): `import jax` is silent."""
    proc = subprocess.run([sys.executable, "-c", "import jax; jax.numpy.ones(2).block_until_ready(); "
                           "print(sorted(jax._src.xla_bridge._topology_factories))"],
                          capture_output=True, text=True, env=clean_env(), cwd=ROOT / "tests")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "cuda" not in proc.stdout


@needs_the_plugin
def test_with_the_gpu_extra_a_users_import_jax_is_jax_alone(a_gpu_extra_environment):
    python, env = a_gpu_extra_environment
    code = ("import jax; jax.numpy.ones(2).block_until_ready(); from jax._src import xla_bridge; "
            "print(sorted(xla_bridge._topology_factories), [d.platform for d in jax.devices()])")
    proc = subprocess.run([*python, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT / "tests")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.strip() == "[] ['cpu']"
    assert "jaxfuse_lint_xla_gpu" in subprocess.run(
        [*python, "-c", "import jaxfuse_lint_xla_gpu; print(jaxfuse_lint_xla_gpu.__file__)"],
        capture_output=True, text=True, env=env).stdout


@needs_the_plugin
def test_with_the_gpu_extra_verify_compiles_with_xla_gpu_without_a_gpu(a_gpu_extra_environment, tmp_path):
    python, env = a_gpu_extra_environment
    proc = subprocess.run([*python, "-m", "jaxfuse_lint", "verify", f"{SUM}::f_sum_jax", "--against",
                           f"{SUM}::f_sum_explicit", "--arg", "f32[1024,2]", "--target", "gpu"],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # Nothing on stderr but the notice that verify runs the user's code (no plugin noise).
    assert [line for line in proc.stderr.splitlines() if "this runs your code" not in line] == []
    assert "compiled with XLA:GPU for NVIDIA H100 80GB HBM3 (gpu = \"h100\") without a GPU (deviceless)" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith("verdict: proved — on GPU (H100, deviceless): 2 → 1 kernels")


@needs_the_plugin
def test_with_the_gpu_extra_jax_imported_first_still_gets_xla_gpu(a_gpu_extra_environment):
    """A notebook imports jax (and runs on its CPU) before it calls jaxfuse_lint.show: the plugin is
    registered then, for compiling only."""
    python, env = a_gpu_extra_environment
    code = ("import jax; jax.numpy.ones(2).block_until_ready()\n"
            "from jaxfuse_lint.verify.backend import select\n"
            "target = select('gpu')\n"
            "print(target.backend, target.deviceless, target.device_kind)\n"
            "print(jax.numpy.ones(2).sum(), [d.platform for d in jax.devices()])\n")
    proc = subprocess.run([*python, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT / "tests")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.splitlines() == ["gpu True NVIDIA H100 80GB HBM3", "2.0 ['cpu']"]
