"""Loading two versions of one file side by side, and reporting user code that fails on import."""
from __future__ import annotations

import sys

import pytest

from jaxfuse_lint.verify.errors import VerifyError
from jaxfuse_lint.verify.loader import get_function, load_module, parse_target, read_source


def test_two_versions_of_one_file_coexist_and_leave_sys_modules_alone(tmp_path):
    path = str(tmp_path / "model.py")
    before_modules = set(sys.modules)
    old = load_module("SCALE = 2\ndef f(x):\n    return x * SCALE\n", path, label="before")
    new = load_module("SCALE = 3\ndef f(x):\n    return x * SCALE\n", path + " (fixed)", label="after")
    assert old.f(1) == 2 and new.f(1) == 3  # each function sees its own module globals
    assert old.__name__ != new.__name__
    assert set(sys.modules) == before_modules
    assert str(tmp_path) not in sys.path


def test_sibling_imports_resolve_while_loading(tmp_path):
    (tmp_path / "helpers_for_verify_test.py").write_text("def twice(x):\n    return 2 * x\n")
    module = load_module(
        "from helpers_for_verify_test import twice\ndef f(x):\n    return twice(x)\n",
        str(tmp_path / "main.py"),
    )
    assert module.f(4) == 8
    sys.modules.pop("helpers_for_verify_test", None)


def test_dataclasses_work_in_loaded_modules(tmp_path):
    # dataclasses look the defining module up in sys.modules while the class is created.
    module = load_module(
        "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\n", str(tmp_path / "d.py")
    )
    assert module.P(3).x == 3


def test_user_code_raising_on_import_is_one_line_with_its_line(tmp_path):
    path = str(tmp_path / "bad.py")
    with pytest.raises(VerifyError) as info:
        load_module("import math\n\nraise ValueError('no data\\nfound')\n", path, label="before")
    message = str(info.value)
    assert message == f"{path}:3: importing the before version raised ValueError: no data found"
    assert "\n" not in message


def test_system_exit_on_import_is_reported_too(tmp_path):
    with pytest.raises(VerifyError, match="SystemExit"):
        load_module("import sys\nsys.exit(3)\n", str(tmp_path / "exits.py"))


def test_syntax_error_names_the_line(tmp_path):
    path = str(tmp_path / "broken.py")
    with pytest.raises(VerifyError, match=r"broken.py:2: syntax error"):
        load_module("x = 1\ndef f(:\n", path)


def test_missing_function_lists_what_is_there(tmp_path):
    path = str(tmp_path / "m.py")
    module = load_module("import math\nVALUE = 1\ndef f(x):\n    return x\ndef g(x):\n    return x\n", path)
    with pytest.raises(VerifyError, match=r"no function `h` \(functions defined there: f, g\)"):
        get_function(module, "h", path)
    with pytest.raises(VerifyError, match="is a int, not a function"):
        get_function(module, "VALUE", path)


def test_targets_and_files():
    assert parse_target("a/b.py::Model.apply").func == "Model.apply"
    assert parse_target("C:/x.py::f").path == "C:/x.py"
    for bad in ("a.py", "a.py::", "::f", "a.py::1f"):
        with pytest.raises(VerifyError, match="bad target"):
            parse_target(bad)
    with pytest.raises(VerifyError, match="file not found"):
        read_source("/nonexistent/verify/file.py")
