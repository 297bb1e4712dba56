"""`[tool.jaxfuse-lint]` in pyproject.toml -> one Settings object.

The table is found upward from the first checked path (or given with --config).
Unknown keys, unknown codes and wrongly typed values are errors (exit 2), never
silently ignored: a typo in `selct` must not turn the linter off.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox",
    ".pants.d", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", "__pypackages__",
    "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
    ".jaxfuse_lint_cache", ".pytest_cache", "__pycache__",
)


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
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    small_axis_max: int = 4
    unroll_max: int = 8
    jax_modules: tuple[str, ...] = ("jax",)
    respect_gitignore: bool = True
    verify: tuple[tuple[str, VerifySpec], ...] = ()
    # Where the pyproject.toml that configured this came from (None: defaults).
    config_path: str | None = None
    project_root: str | None = None
    cache_dir: str | None = None
    # Internal-only switches that change analysis results (part of the cache key).
    extra: tuple[tuple[str, Any], ...] = ()

    def fingerprint(self) -> str:
        """A stable string of everything that changes what `check` reports."""
        fields = (
            self.select, self.extend_select, self.ignore, self.per_file_ignores,
            self.small_axis_max, self.unroll_max, self.jax_modules, self.extra,
        )
        return repr(fields)

    def is_enabled(self, code: str, filename: str | None = None) -> bool:
        selected = _longest_match(code, self.select + self.extend_select)
        ignored = _longest_match(code, self.ignore)
        if selected < 0 or ignored > selected:
            return False
        if filename is not None and self.per_file_ignores:
            for pattern, codes in self.per_file_ignores:
                if _path_matches(filename, pattern, self.project_root) and any(
                    code.startswith(c) for c in codes
                ):
                    return False
        return True


def _longest_match(code: str, prefixes: Iterable[str]) -> int:
    """Length of the longest prefix that matches (ruff: the most specific selector wins)."""
    best = -1
    for p in prefixes:
        if p == "ALL" or code.startswith(p):
            best = max(best, 0 if p == "ALL" else len(p))
    return best


def _path_matches(filename: str, pattern: str, root: str | None) -> bool:
    import pathspec

    rel = filename
    if root:
        try:
            rel = os.path.relpath(os.path.abspath(filename), root)
        except ValueError:
            rel = filename
    spec = pathspec.GitIgnoreSpec.from_lines([pattern])
    return spec.match_file(rel.replace(os.sep, "/"))


_KEYS = {
    "select", "extend-select", "ignore", "per-file-ignores", "exclude", "extend-exclude",
    "small-axis-max", "unroll-max", "jax-modules", "respect-gitignore", "verify",
    "cache-dir",
}


def validate_codes(codes: Iterable[str], where: str) -> tuple[str, ...]:
    """Every selector must be a known code or a prefix of one ("JF", "JF2", "JF203", "ALL")."""
    from jaxfuse_lint.rule_codes import rule_codes

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
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"{candidate}: invalid TOML: {exc}") from None
            if "jaxfuse-lint" in data.get("tool", {}):
                return candidate
    return None


def load_settings(config_path: str | os.PathLike | None = None, start: str | os.PathLike = ".") -> Settings:
    """Settings from an explicit file, or from the nearest pyproject.toml, or the defaults."""
    if config_path is None:
        found = find_pyproject(start)
        if found is None:
            return Settings(project_root=str(Path(start).resolve() if Path(start).is_dir() else Path(start).resolve().parent))
        config_path = found
    path = Path(config_path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    if path.name == "pyproject.toml" or "tool" in data:
        table = data.get("tool", {}).get("jaxfuse-lint", {})
    else:  # a dedicated jaxfuse-lint.toml holds the table at top level
        table = data
    return settings_from_table(table, str(path), str(path.resolve().parent))


def settings_from_table(table: dict[str, Any], where: str, root: str) -> Settings:
    unknown = set(table) - _KEYS
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) in [tool.jaxfuse-lint]: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(_KEYS))})"
        )
    s = Settings(config_path=where, project_root=root)
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
        kw["extend_select"] = validate_codes(str_list("extend-select"), where)
    if "ignore" in table:
        kw["ignore"] = validate_codes(str_list("ignore"), where)
    if "exclude" in table:
        kw["exclude"] = str_list("exclude")
    if "extend-exclude" in table:
        kw["extend_exclude"] = str_list("extend-exclude")
    if "small-axis-max" in table:
        kw["small_axis_max"] = pos_int("small-axis-max")
    if "unroll-max" in table:
        kw["unroll_max"] = pos_int("unroll-max")
    if "jax-modules" in table:
        mods = str_list("jax-modules")
        if not mods:
            raise ConfigError(f"{where}: `jax-modules` must name at least one module")
        kw["jax_modules"] = mods
    if "respect-gitignore" in table:
        if not isinstance(table["respect-gitignore"], bool):
            raise ConfigError(f"{where}: `respect-gitignore` must be true or false")
        kw["respect_gitignore"] = table["respect-gitignore"]
    if "cache-dir" in table:
        if not isinstance(table["cache-dir"], str):
            raise ConfigError(f"{where}: `cache-dir` must be a string")
        kw["cache_dir"] = str(Path(root) / table["cache-dir"])
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{where}: `per-file-ignores` must be a table of pattern = [codes]")
        items = []
        for pattern, codes in pfi.items():
            if not isinstance(codes, list):
                raise ConfigError(f"{where}: per-file-ignores for `{pattern}` must be a list of codes")
            items.append((pattern, validate_codes(codes, f"{where}: per-file-ignores `{pattern}`")))
        kw["per_file_ignores"] = tuple(items)
    if "verify" in table:
        kw["verify"] = _verify_specs(table["verify"], where)
    return replace(s, **kw)


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


def with_cli_overrides(
    settings: Settings,
    *,
    select: Iterable[str] | None = None,
    extend_select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    cache_dir: str | None = None,
) -> Settings:
    """Command-line selectors replace (select) or extend (extend-select, ignore) the file's."""
    kw: dict[str, Any] = {}
    if select:
        kw["select"] = validate_codes(_split(select), "--select")
    if extend_select:
        kw["extend_select"] = settings.extend_select + validate_codes(_split(extend_select), "--extend-select")
    if ignore:
        kw["ignore"] = settings.ignore + validate_codes(_split(ignore), "--ignore")
    if cache_dir:
        kw["cache_dir"] = cache_dir
    return replace(settings, **kw) if kw else settings


def _split(values: Iterable[str]) -> list[str]:
    out = []
    for v in values:
        out.extend(x for x in v.replace(" ", "").split(",") if x)
    return out
