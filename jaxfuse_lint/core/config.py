"""`[tool.jaxfuse-lint]` in pyproject.toml -> one Settings object.

The table is found upward from the first checked path (or given with --config).
Unknown keys, unknown codes and wrongly typed values are errors (exit 2), never
silently ignored: a typo in `selct` must not turn the linter off.
"""
from __future__ import annotations

import functools
import os
import re
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Iterable

# Notebooks are sources too (as in ruff): their code cells are checked and fixed in place (parse/notebook.py).
DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.ipynb")
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox",
    ".pants.d", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", "__pypackages__",
    "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
    ".jaxfuse_lint_cache", ".pytest_cache", "__pycache__",
)


# Rules a bare `JF` (the default selection) does not select: the JF9xx rules are about the
# suppression comments themselves (ruff's RUF100 is not a default rule either). Rules declare
# it too (`Rule.default_enabled`); a test keeps the two in step.
# The `--output-format` / `output-format` names; report/ holds a renderer for each (its FORMATS registry).
OUTPUT_FORMATS = ("concise", "full", "json", "json-lines", "sarif", "github", "gitlab", "rdjson", "junit", "pylint")
OPT_IN_PREFIXES = ("JF9",)
# How far a configuration may raise `max-file-size`: memory per file stays bounded whatever the
# linted tree's pyproject.toml says (a file of this size takes ~2.5 GB to fix).
MAX_FILE_SIZE_CEILING = 2 << 20
# A notebook's JSON is mostly its outputs (pictures as base64), which are stepped over, never built
# (parse/notebook.py): its own limit, `max-notebook-size`, bounds only what reading the file holds.
MAX_NOTEBOOK_SIZE_CEILING = 1 << 30
# Test code runs once: its recompilation, constant and memory findings are rarely worth a change.
# Performance rules (JF1xx, JF2xx, JF3xx, JF5xx) are off there by default; correctness rules
# (JF4xx) stay on. `per-file-ignores` replaces this table, `extend-per-file-ignores` adds to it.
PERFORMANCE_CODES = ("JF1", "JF2", "JF3", "JF5")
DEFAULT_PER_FILE_IGNORES = tuple(
    (pattern, PERFORMANCE_CODES) for pattern in ("**/tests/**", "**/test/**", "test_*.py", "*_test.py", "conftest.py"))


# `--ignore-noqa` (the command line's only; ruff's): `# noqa` comments and file-level exemptions
# suppress nothing. An internal switch (Settings.extra): part of the cache key.
IGNORE_NOQA = ("noqa", "ignore")


class ConfigError(Exception):
    """A usage or configuration error: reported on one line, exit code 2."""


@dataclass(frozen=True)
class VerifySpec:
    """Argument shapes for `verify`, keyed by "pkg.mod:func"."""

    args: tuple[str, ...]
    static: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("JF",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = DEFAULT_PER_FILE_IGNORES
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    small_axis_max: int = 4
    unroll_max: int = 8
    jax_modules: tuple[str, ...] = ("jax",)
    # The backend rules and fixes decide for (jaxfuse_lint.core.targets): XLA:GPU and XLA:CPU differ.
    target: str = "gpu"
    # The GPU model verify/explain compile for when no GPU is present (jaxfuse_lint/gpu_targets): a name or a path.
    gpu: str | None = None
    respect_gitignore: bool = True
    verify: tuple[tuple[str, VerifySpec], ...] = ()
    # Which files a folder walk selects (discovery.is_source); glob patterns, ruff's `include`.
    include: tuple[str, ...] = DEFAULT_INCLUDE
    # Rules whose fixes may be offered and applied (ruff's `fixable` / `unfixable`).
    fixable: tuple[str, ...] = ("ALL",)
    unfixable: tuple[str, ...] = ()
    # The configured default for --output-format (None: concise).
    output_format: str | None = None
    # Library mode: glob patterns of qualified names, or "public-array-functions" (model/assumed.py).
    assume_traced: tuple[str, ...] = ()
    # Where the pyproject.toml that configured this came from (None: defaults).
    config_path: str | None = None
    project_root: str | None = None
    cache_dir: str | None = None
    # A `cache-dir` from a configuration file must stay inside this folder (the project root):
    # reached from it without `..` or a link (run/cache.py). None: named on the command line
    # (or through the API), where it may be anywhere.
    cache_dir_root: str | None = None
    # Measured rules (JF5xx, from a runtime profile): report above these.
    max_compilations: int = 3
    constant_bytes_max: int = 1 << 20
    temporary_bytes_max: int = 16 << 20
    # Files larger than this (bytes) are not read or analysed: JF000 says so (one file must not
    # take a run down). Checking costs ~0.6 KB of memory per byte of source, fixing ~1.2 KB, and
    # about 16 s of CPU per MiB (benchmarks/bench_fix_scaling.py): 10 MiB took a worker to 9 GB.
    max_file_size: int = 1 << 20
    # A notebook's `max-file-size` applies to its code (the joined code cells); its file, mostly
    # outputs, is read up to this many bytes (50 MiB: notebooks with pictures are a few MB).
    max_notebook_size: int = 50 << 20
    # The preview tier (ruff's meaning): rules and findings whose evidence is not yet good enough for
    # the default output are reported only when this is on (`preview = true`, `--preview`).
    preview: bool = False
    # The Python the project's code is written for (ruff's spelling, "py312"): its grammar decides what
    # is a syntax error (parse/grammar.py). None: `requires-python` of the project's pyproject.toml
    # gave none either; the running Python's grammar.
    target_version: str | None = None
    # `[tool.jaxfuse-lint.severity]`: (code or prefix, "error" | "warning" | "note") over the default
    # levels of core/severity.py (output formats only: not part of what `check` finds).
    severity: tuple[tuple[str, str], ...] = ()
    # Internal-only switches that change analysis results (part of the cache key).
    extra: tuple[tuple[str, Any], ...] = ()

    def fingerprint(self) -> str:
        """A stable string of everything that changes what `check` reports."""
        fields = (
            self.select, self.extend_select, self.ignore, self.per_file_ignores,
            self.small_axis_max, self.unroll_max, self.jax_modules, self.target, self.extra,
            self.max_compilations, self.constant_bytes_max, self.temporary_bytes_max, self.assume_traced,
            self.max_file_size, self.max_notebook_size, self.preview, self.target_version,
        )
        if self.fixable != ("ALL",) or self.unfixable:  # whether diagnostics carry fixes
            fields += (self.fixable, self.unfixable)
        return repr(fields)

    def size_limit(self, filename: str | os.PathLike) -> int:
        """How many bytes of this file are read: `max-notebook-size` for a notebook (the limit on
        its code is `max-file-size`), else `max-file-size`."""
        return self.max_notebook_size if os.fspath(filename).lower().endswith(".ipynb") else self.max_file_size

    def is_fixable(self, code: str) -> bool:
        """In `fixable` and not in `unfixable` (ruff: `unfixable` removes from `fixable`)."""
        return _longest_match(code, self.fixable) >= 0 and _longest_match(code, self.unfixable) < 0

    def is_enabled(self, code: str, filename: str | None = None) -> bool:
        selectors = self.select + self.extend_select
        selected = _longest_match(code, selectors)
        ignored = _longest_match(code, self.ignore)
        if selected < 0 or ignored > selected:
            return False
        if code.startswith(OPT_IN_PREFIXES) and selected <= len("JF") and "ALL" not in selectors:
            return False  # opt-in rules are selected by name (JF9, JF901) or ALL, never by `JF`
        if filename is not None and self.per_file_ignores:
            ignored_here = _file_ignores(filename, self.per_file_ignores, self.project_root or os.getcwd())
            if any(code.startswith(c) for c in ignored_here):
                return False
        return True


@functools.lru_cache(maxsize=4096)
def _file_ignores(filename: str, table: tuple[tuple[str, tuple[str, ...]], ...], root: str) -> tuple[str, ...]:
    """The code prefixes `per-file-ignores` turns off for one file (asked once per rule and file)."""
    return tuple(c for pattern, codes in table if _path_matches(filename, pattern, root) for c in codes)


def _longest_match(code: str, prefixes: Iterable[str]) -> int:
    """Length of the longest prefix that matches (ruff: the most specific selector wins)."""
    best = -1
    for p in prefixes:
        if p == "ALL" or code.startswith(p):
            best = max(best, 0 if p == "ALL" else len(p))
    return best


def _path_matches(filename: str, pattern: str, root: str | None) -> bool:
    rel = filename
    root = root or os.getcwd()  # no project root: patterns are relative to where it runs (never to `/`)
    if root:
        try:
            rel = os.path.relpath(os.path.abspath(filename), root)
        except ValueError:
            rel = filename
    return _spec(pattern).match_file(rel.replace(os.sep, "/"))


@functools.lru_cache(maxsize=256)
def _spec(pattern: str):
    from jaxfuse_lint.core.gitignore import spec

    return spec([pattern])


_KEYS = {
    "select", "extend-select", "ignore", "per-file-ignores", "exclude", "extend-exclude",
    "small-axis-max", "unroll-max", "jax-modules", "respect-gitignore", "verify",
    "cache-dir", "target", "gpu", "max-compilations", "constant-bytes-max", "temporary-bytes-max", "assume-traced",
    "max-file-size", "max-notebook-size", "preview", "target-version",
}
# Settings fields that are not configuration keys (where the settings came from, internals).
_NOT_KEYS = {"config_path", "project_root", "cache_dir_root", "extra"}
# Keys that modify other settings instead of having a field of their own.
_MODIFIER_KEYS = {"extend", "extend-per-file-ignores"}


def known_keys() -> set[str]:
    """Every [tool.jaxfuse-lint] key: one per Settings field (`small_axis_max` is
    `small-axis-max`), so a setting added to the dataclass is a known key at once."""
    from_fields = {f.name.replace("_", "-") for f in fields(Settings) if f.name not in _NOT_KEYS}
    return from_fields | _KEYS | _MODIFIER_KEYS


def _unknown_key_error(key: str, where: str) -> ConfigError:
    import difflib

    known = sorted(known_keys())
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"; did you mean `{close[0]}`?" if close else f" (known keys: {', '.join(known)})"
    return ConfigError(f"{where}: unknown key `{key}` in [tool.jaxfuse-lint]{hint}")


def validate_codes(codes: Iterable[str], where: str) -> tuple[str, ...]:
    """Every selector must be a known code or a prefix of one ("JF", "JF2", "JF203", "ALL")."""
    from jaxfuse_lint.core.rule_codes import rule_codes

    known = rule_codes() | {"JF000"}
    out = []
    for raw in codes:
        code = str(raw).strip().upper()
        if not code:
            continue
        if code != "ALL" and not any(k.startswith(code) for k in known):
            raise ConfigError(f"{where}: unknown rule selector `{raw}` (known: {', '.join(sorted(known))})")
        out.append(code)
    return tuple(out)


def validate_target(value: Any, where: str) -> str:
    """One of jaxfuse_lint.core.targets.TARGETS ("gpu", "cpu", "tpu"), case-insensitive."""
    from jaxfuse_lint.core.targets import TARGETS

    text = value.strip().lower() if isinstance(value, str) else None
    if text not in TARGETS:
        raise ConfigError(f"{where} must be one of {', '.join(repr(t) for t in TARGETS)}, got {value!r}")
    return text


# ruff's spelling of a Python version: "py37" ... "py314".
_TARGET_VERSION = re.compile(r"py3(\d{1,2})")
OLDEST_TARGET_VERSION = 7


def validate_target_version(value: Any, where: str) -> str:
    """ruff's `target-version` spelling, `py3N` (N >= 7), case-insensitive."""
    text = value.strip().lower() if isinstance(value, str) else ""
    m = _TARGET_VERSION.fullmatch(text)
    if m is None or int(m.group(1)) < OLDEST_TARGET_VERSION:
        raise ConfigError(f'{where} must be a Python version like "py312" (py37 or later), got {value!r}')
    return text


_SPECIFIER = re.compile(r"\s*(~=|===|==|>=|>|!=|<=|<)\s*(\d+)(?:\.(\d+|\*))?(?:\.(?:\d+|\*))*\s*")


def target_from_requires_python(spec: Any) -> str | None:
    """The oldest Python 3 a `requires-python` specifier admits, as a target version
    (">=3.12" -> "py312", "~=3.10" and ">=3.10,<3.14" -> "py310", "==3.11.*" -> "py311",
    ">3.9" -> "py39", as ruff reads it); None when it names no lower bound."""
    if not isinstance(spec, str):
        return None
    lows = []
    for clause in spec.split(","):
        m = _SPECIFIER.fullmatch(clause.strip())
        if m is None:
            if clause.strip():
                return None
            continue
        op, major, minor = m.group(1), int(m.group(2)), m.group(3)
        if op in (">=", "~=", "==", "===", ">") and major == 3 and minor not in (None, "*"):
            lows.append(max(int(minor), OLDEST_TARGET_VERSION))
        elif op in (">=", "~=", "==", "===", ">") and major > 3:
            return None
    return f"py3{max(lows)}" if lows else None


def requires_python_near(start: str | os.PathLike) -> str | None:
    """`target-version` from the nearest pyproject.toml's `[project] requires-python`, looking
    upward from `start` (the first pyproject.toml found decides, as in ruff)."""
    p = Path(start).resolve()
    if p.is_file():
        p = p.parent
    for d in (p, *p.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return _requires_python_of(candidate)
    return None


def _requires_python_of(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
        return None
    project = data.get("project")
    return target_from_requires_python(project.get("requires-python")) if isinstance(project, dict) else None


def check_globs(patterns: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The patterns, or a ConfigError for one that is not a glob (an unclosed `[`, a trailing
    backslash: git's matching makes it match nothing, silently; ruff's globset rejects it)."""
    for pattern in patterns:
        i = 0
        while i < len(pattern):
            if pattern[i] == "\\":
                if i + 1 == len(pattern):
                    raise ConfigError(f"{where}: invalid glob {pattern!r}: it ends with a lone backslash")
                i += 2
                continue
            if pattern[i] == "[":
                j = i + 1 + (pattern[i + 1:i + 2] in ("!", "^"))
                j += pattern[j:j + 1] == "]"  # `[]...]`: a leading `]` is a member
                close = pattern.find("]", j)
                if close < 0:
                    raise ConfigError(f"{where}: invalid glob {pattern!r}: unclosed character class `[`")
                i = close
            i += 1
    return patterns


# tomllib reads nested arrays and inline tables by recursion: a file nested thousands deep
# exhausts Python's stack (a RecursionError, never a TOMLDecodeError).
_TOO_DEEP = "arrays or tables nested too deeply to read"


def find_pyproject(start: str | os.PathLike) -> Path | None:
    """The nearest pyproject.toml with a [tool.jaxfuse-lint] table, looking upward."""
    p = Path(start).resolve()
    if p.is_file():
        p = p.parent
    for d in (p, *p.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            try:
                with open(candidate, "rb") as fh:
                    data = tomllib.load(fh)
            except OSError:
                continue
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{candidate}: invalid TOML: {_toml_error(exc, candidate)}") from None
            except RecursionError:
                raise ConfigError(f"{candidate}: invalid TOML: {_TOO_DEEP}") from None
            if "jaxfuse-lint" in data.get("tool", {}):
                return candidate
    return None


def load_settings(config_path: str | os.PathLike | None = None, start: str | os.PathLike = ".") -> Settings:
    """Settings from an explicit file, or from the nearest pyproject.toml, or the defaults."""
    if config_path is None:
        found = find_pyproject(start)
        if found is None:
            return Settings(project_root=str(Path(start).resolve() if Path(start).is_dir() else Path(start).resolve().parent),
                            target_version=requires_python_near(start))
        config_path = found
    settings = _load_file(Path(config_path), root=None, chain=())
    if settings.target_version is None:
        # ruff's default: the `requires-python` of the pyproject.toml that configures it, else the nearest one.
        path = Path(config_path)
        version = _requires_python_of(path) if path.name == "pyproject.toml" else None
        settings = replace(settings, target_version=version or requires_python_near(path.resolve().parent))
    return settings


def _toml_error(exc: Exception, path: Path) -> str:
    """tomllib's reason, always with its line and column: where it says "at end of document" (an
    unclosed array), and for a byte that is not UTF-8 (which tomllib leaves to the decoder)."""
    if isinstance(exc, UnicodeDecodeError):
        data = exc.object
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line}, column {column})"
    reason = str(exc)
    if reason.endswith("(at end of document)"):
        try:
            lines = path.read_bytes().decode("utf-8").split("\n")
        except (OSError, UnicodeDecodeError):
            return reason
        reason = reason.replace("(at end of document)", f"(at the end of the file, line {len(lines)}, column "
                                                         f"{len(lines[-1]) + 1})")
    return reason


def _read_table(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a config file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {_toml_error(exc, path)}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: {_TOO_DEEP}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror or exc}") from None
    if path.name == "pyproject.toml" or "tool" in data:
        table = data.get("tool", {}).get("jaxfuse-lint", {})
    else:  # a dedicated jaxfuse-lint.toml holds the table at top level
        table = data
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.jaxfuse-lint] must be a table")
    return table


def _load_file(path: Path, root: str | None, chain: tuple[Path, ...]) -> Settings:
    """One config file, after the one it `extend`s (ruff's inheritance: the extending file's
    keys win; `extend-select`, `extend-exclude` and `extend-per-file-ignores` add up). The
    project root stays the directory of the first file."""
    resolved = path.resolve()
    if resolved in chain:
        raise ConfigError(f"{path}: `extend` cycle: {' -> '.join(str(p) for p in (*chain, resolved))}")
    table = _read_table(path)
    root = root or str(resolved.parent)
    base = None
    if "extend" in table:
        target = table["extend"]
        if not isinstance(target, str):
            raise ConfigError(f"{path}: `extend` must be a path to another config file")
        target_path = Path(os.path.expanduser(target))
        if not target_path.is_absolute():
            target_path = resolved.parent / target_path
        base = _load_file(target_path, root, (*chain, resolved))
    return settings_from_table(table, str(path), root, base=base)


def settings_from_table(table: dict[str, Any], where: str, root: str, base: Settings | None = None) -> Settings:
    """`base`: the settings of the file this one `extend`s (default: the built-in defaults)."""
    known = known_keys()
    for key in table:
        if key not in known:
            raise _unknown_key_error(key, where)
    s = replace(base, config_path=where, project_root=root) if base is not None else Settings(
        config_path=where, project_root=root)
    kw: dict[str, Any] = {}

    def str_list(key: str) -> tuple[str, ...]:
        value = table[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: `{key}` must be a list of strings")
        return tuple(value)

    def pos_int(key: str) -> int:
        value = table[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{where}: `{key}` must be a positive integer, got {value!r}")
        return value

    if "select" in table:
        kw["select"] = validate_codes(str_list("select"), where)
    if "extend-select" in table:
        kw["extend_select"] = s.extend_select + validate_codes(str_list("extend-select"), where)
    if "ignore" in table:
        kw["ignore"] = validate_codes(str_list("ignore"), where)
    if "exclude" in table:
        kw["exclude"] = check_globs(str_list("exclude"), f"{where}: `exclude`")
    if "extend-exclude" in table:
        kw["extend_exclude"] = s.extend_exclude + check_globs(str_list("extend-exclude"), f"{where}: `extend-exclude`")
    if "include" in table:
        kw["include"] = check_globs(str_list("include"), f"{where}: `include`")
        if not kw["include"]:
            raise ConfigError(f"{where}: `include` must name at least one pattern")
    if "fixable" in table:
        kw["fixable"] = validate_codes(str_list("fixable"), where)
    if "unfixable" in table:
        kw["unfixable"] = validate_codes(str_list("unfixable"), where)
    if "output-format" in table:
        value = table["output-format"]
        if value not in OUTPUT_FORMATS:
            raise ConfigError(f"{where}: `output-format` must be one of {', '.join(sorted(OUTPUT_FORMATS))}, "
                              f"got {value!r}")
        kw["output_format"] = value
    if "small-axis-max" in table:
        kw["small_axis_max"] = pos_int("small-axis-max")
    if "unroll-max" in table:
        kw["unroll_max"] = pos_int("unroll-max")
    for key in ("max-compilations", "constant-bytes-max", "temporary-bytes-max", "max-file-size", "max-notebook-size"):
        if key in table:
            kw[key.replace("-", "_")] = pos_int(key)
    if kw.get("max_file_size", 0) > MAX_FILE_SIZE_CEILING:
        raise ConfigError(f"{where}: `max-file-size` must be at most {MAX_FILE_SIZE_CEILING:,} bytes (a larger file "
                          f"takes gigabytes of memory to analyse), got {kw['max_file_size']:,}")
    if kw.get("max_notebook_size", 0) > MAX_NOTEBOOK_SIZE_CEILING:
        raise ConfigError(f"{where}: `max-notebook-size` must be at most {MAX_NOTEBOOK_SIZE_CEILING:,} bytes, "
                          f"got {kw['max_notebook_size']:,}")
    if "jax-modules" in table:
        mods = str_list("jax-modules")
        if not mods:
            raise ConfigError(f"{where}: `jax-modules` must name at least one module")
        kw["jax_modules"] = mods
    if "target" in table:
        kw["target"] = validate_target(table["target"], f"{where}: `target`")
    if "gpu" in table:
        kw["gpu"] = validate_gpu(table["gpu"], f"{where}: `gpu`", os.path.dirname(os.path.abspath(where)))
    if "target-version" in table:
        kw["target_version"] = validate_target_version(table["target-version"], f"{where}: `target-version`")
    if "preview" in table:
        if not isinstance(table["preview"], bool):
            raise ConfigError(f"{where}: `preview` must be true or false")
        kw["preview"] = table["preview"]
    if "respect-gitignore" in table:
        if not isinstance(table["respect-gitignore"], bool):
            raise ConfigError(f"{where}: `respect-gitignore` must be true or false")
        kw["respect_gitignore"] = table["respect-gitignore"]
    if "cache-dir" in table:
        kw["cache_dir"] = str(Path(root) / _cache_dir(table["cache-dir"], where, root))
        kw["cache_dir_root"] = root
    if "per-file-ignores" in table:
        kw["per_file_ignores"] = _per_file_ignores(table, "per-file-ignores", where)
    if "extend-per-file-ignores" in table:
        kw["per_file_ignores"] = kw.get("per_file_ignores", s.per_file_ignores) + _per_file_ignores(
            table, "extend-per-file-ignores", where)
    if "assume-traced" in table:
        value = table["assume-traced"]
        if value == "public-array-functions":
            kw["assume_traced"] = (value,)
        elif isinstance(value, list) and all(isinstance(v, str) and v for v in value):
            kw["assume_traced"] = tuple(value)
        else:
            raise ConfigError(f'{where}: `assume-traced` must be "public-array-functions" or a list of '
                              f'qualified-name patterns like "pkg.kernels.*", got {value!r}')
    if "verify" in table:
        kw["verify"] = _verify_specs(table["verify"], where)
    if "severity" in table:
        kw["severity"] = _severity(table["severity"], where)
    return replace(s, **kw)


def _severity(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    """[tool.jaxfuse-lint.severity]: code or prefix = "error" | "warning" | "note"."""
    from jaxfuse_lint.core.severity import LEVELS

    if not isinstance(value, dict):
        raise ConfigError(f'{where}: [tool.jaxfuse-lint.severity] must map codes to a level, e.g. JF401 = "error"')
    out = []
    for code, level in value.items():
        (selector,) = validate_codes([code], f"{where}: severity") or ("",)
        if not selector:
            raise ConfigError(f"{where}: severity: an empty rule selector")
        if level not in LEVELS:
            raise ConfigError(f"{where}: severity of `{code}` must be one of {', '.join(repr(x) for x in LEVELS)}, "
                              f"got {level!r}")
        out.append((selector, level))
    return tuple(out)


def _per_file_ignores(table: dict[str, Any], key: str, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    pfi = table[key]
    if not isinstance(pfi, dict):
        raise ConfigError(f"{where}: `{key}` must be a table of pattern = [codes]")
    items = []
    for pattern, codes in pfi.items():
        if not isinstance(codes, list):
            raise ConfigError(f"{where}: {key} for `{pattern}` must be a list of codes")
        items.append((pattern, validate_codes(codes, f"{where}: {key} `{pattern}`")))
    return tuple(items)


def _verify_specs(value: Any, where: str) -> tuple[tuple[str, VerifySpec], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f'{where}: [tool.jaxfuse-lint.verify] must map "pkg.mod:func" to a list of shapes')
    specs = []
    for target, spec in value.items():
        if ":" not in target:
            raise ConfigError(f'{where}: verify target `{target}` must look like "pkg.mod:func"')
        if isinstance(spec, list) and all(isinstance(a, str) for a in spec):
            specs.append((target, VerifySpec(tuple(spec))))
        elif isinstance(spec, dict):
            args = spec.get("args", [])
            static = spec.get("static", {})
            if not isinstance(args, list) or not isinstance(static, dict):
                raise ConfigError(f"{where}: verify target `{target}` needs args = [...] and static = {{...}}")
            specs.append((target, VerifySpec(tuple(args), tuple((k, str(v)) for k, v in static.items()))))
        else:
            raise ConfigError(f"{where}: verify target `{target}` must be a list of shapes like \"f32[64,3]\"")
    return tuple(specs)


def validate_gpu(value: Any, where: str, base: str | None = None) -> str:
    """A GPU model name (jaxfuse_lint/gpu_targets) or the path of an XLA target config, made absolute."""
    from jaxfuse_lint.gpu_targets import normalize

    try:
        return normalize(value, base)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _cache_dir(value: Any, where: str, root: str) -> str:
    """A configured `cache-dir`: a folder inside the project root (a checked tree's own
    configuration must not make a run write elsewhere); the command line's may be anywhere."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: `cache-dir` must be a non-empty string")
    rel = os.path.normpath(value)
    if os.path.isabs(value) or rel in (".", "..") or rel.startswith(".." + os.sep):
        raise ConfigError(f"{where}: `cache-dir` must be a folder inside the project ({root}), given relative to it, "
                          f"not {value!r} (--cache-dir on the command line may name any folder)")
    return rel


def isolated_settings(start: str | os.PathLike = ".") -> Settings:
    """`--isolated`: the built-in defaults, no configuration file read (not even `requires-python`)."""
    p = Path(start).resolve()
    return Settings(project_root=str(p if p.is_dir() else p.parent))


def config_override(text: str) -> dict[str, Any]:
    """One `--config KEY=VALUE` (ruff's): a TOML setting of [tool.jaxfuse-lint], such as
    `select = ["JF1"]`, `preview=true`, `per-file-ignores = {"x.py" = ["JF2"]}`."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config {text!r}: not a config file, and not a valid `KEY = VALUE` TOML setting "
                          f"({exc})") from None
    if "extend" in table:
        raise ConfigError(f"--config {text!r}: `extend` names a config file: give it with --config PATH")
    return table


def with_config_overrides(settings: Settings, overrides: Iterable[str]) -> Settings:
    """The settings with each `--config KEY=VALUE` applied over the configuration file's (ruff: an
    inline setting wins over the file's; `extend-select` and the other `extend-*` keys add to it).
    Unknown keys and wrongly typed values are errors, as in a file."""
    table: dict[str, Any] = {}
    for text in overrides:
        table.update(config_override(text))
    if not table:
        return settings
    root = settings.project_root or os.getcwd()
    updated = settings_from_table(table, "--config", root, base=settings)
    return replace(updated, config_path=settings.config_path, project_root=settings.project_root)


def with_cli_overrides(
    settings: Settings,
    *,
    select: Iterable[str] | None = None,
    extend_select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    cache_dir: str | None = None,
    target: str | None = None,
    gpu: str | None = None,
    preview: bool | None = None,
    fixable: Iterable[str] | None = None,
    extend_fixable: Iterable[str] | None = None,
    unfixable: Iterable[str] | None = None,
    ignore_noqa: bool = False,
) -> Settings:
    """Command-line selectors replace (select, fixable) or extend (extend-select, ignore,
    extend-fixable, unfixable) the file's."""
    kw: dict[str, Any] = {}
    if fixable:
        kw["fixable"] = validate_codes(_split(fixable), "--fixable")
    if extend_fixable:
        kw["fixable"] = kw.get("fixable", settings.fixable) + validate_codes(_split(extend_fixable), "--extend-fixable")
    if unfixable:
        kw["unfixable"] = settings.unfixable + validate_codes(_split(unfixable), "--unfixable")
    if ignore_noqa and IGNORE_NOQA not in settings.extra:
        kw["extra"] = settings.extra + (IGNORE_NOQA,)
    if preview is not None:
        kw["preview"] = preview
    if target:
        kw["target"] = validate_target(target, "--target")
    if gpu:
        kw["gpu"] = validate_gpu(gpu, "--gpu", os.getcwd())
    if select:
        kw["select"] = validate_codes(_split(select), "--select")
    if extend_select:
        kw["extend_select"] = settings.extend_select + validate_codes(_split(extend_select), "--extend-select")
    if ignore:
        kw["ignore"] = settings.ignore + validate_codes(_split(ignore), "--ignore")
    if cache_dir:
        kw["cache_dir"] = cache_dir
        kw["cache_dir_root"] = None
    return replace(settings, **kw) if kw else settings


def _split(values: Iterable[str]) -> list[str]:
    out = []
    for v in values:
        out.extend(x for x in v.replace(" ", "").split(",") if x)
    return out


def split_patterns(values: Iterable[str]) -> tuple[str, ...]:
    """Command-line patterns: repeated or comma-separated (`--exclude a,b --exclude c`)."""
    out = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return tuple(out)
