"""Check that the hashed lock files still satisfy pyproject.toml.

The action's image is built from ``requirements.lock`` (the runtime dependencies) and
``requirements-build.lock`` (the build backend) with ``pip install --require-hashes
--no-deps``, so nothing the locks leave out is ever resolved. ``scripts/lock.sh`` writes
both. This check fails, naming the package and the fix, when:

* a requirement of ``pyproject.toml`` (``[project].dependencies`` against
  ``requirements.lock``, ``[build-system].requires`` against ``requirements-build.lock``)
  has no pin in its lock, or its pin lies outside the requirement's specifier;
* an entry is not an exact ``name==version`` pin carrying at least one
  ``--hash=sha256:``, or is anything but a plain requirement (a URL, an editable, an
  option other than ``--hash``), or a name is pinned twice for one environment;
* ``requirements.lock`` is not closed: a dependency (``Requires-Dist``, with the extras
  asked for) of a locked distribution has no pin that satisfies it, or a pin is reached
  from nothing (stale). This is judged for the running interpreter's environment
  markers, from the locked distributions' metadata as installed here: ``.ci/run``
  installs the lock into its environment first, and an installed version that differs
  from its pin is reported too. ``pip check`` in the image build proves the same for
  the image's interpreter and each platform.

usage: python scripts/check_lock.py [--root DIR]      (exit 0: satisfied, 1: not)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker, default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

RUNTIME_LOCK = "requirements.lock"
BUILD_LOCK = "requirements-build.lock"
LOCK_COMMAND = "scripts/lock.sh"
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")
FIX = f"run {LOCK_COMMAND} and commit both lock files"

Environment = Mapping[str, str]
# name -> (installed version, its Requires-Dist lines), or None when not installed
Installed = Callable[[NormalizedName], tuple[Version, list[str]] | None]


@dataclass(frozen=True)
class Pin:
    """One entry of a lock file: an exact version and the hashes of its files."""

    name: NormalizedName
    version: Version
    marker: Marker | None
    hashes: tuple[str, ...]
    line: int

    def applies(self, env: Environment) -> bool:
        return self.marker is None or self.marker.evaluate(dict(env))


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each entry: continuations joined, comments dropped."""
    start, parts = 0, list[str]()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not parts:
            start = number
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        parts.append(line)
        joined = " ".join(part.strip() for part in parts).strip()
        parts = []
        if joined:
            yield start, joined
    if parts and " ".join(parts).strip():
        yield start, " ".join(part.strip() for part in parts).strip()


def parse_lock(text: str, label: str) -> tuple[list[Pin], list[str]]:
    """The pins of a lock file and the problems with its entries."""
    pins: list[Pin] = []
    problems: list[str] = []
    head = text.splitlines()[:3]
    if not any(LOCK_COMMAND in line for line in head):
        problems.append(f"{label}: its header does not name {LOCK_COMMAND}: {FIX}")
    for number, entry in _logical_lines(text):
        where = f"{label} line {number}"
        requirement_text, *options = re.split(r"\s+(?=--)", entry)
        bad = [option for option in options if not HASH.fullmatch(option)]
        if requirement_text.startswith("-") or bad:
            problems.append(f"{where}: only name==version with --hash=sha256: entries: {entry!r}")
            continue
        try:
            requirement = Requirement(requirement_text)
        except InvalidRequirement as exc:
            problems.append(f"{where}: not a requirement ({exc}): {requirement_text!r}")
            continue
        specs = list(requirement.specifier)
        if (
            requirement.url
            or requirement.extras
            or len(specs) != 1
            or specs[0].operator != "=="
            or "*" in specs[0].version
        ):
            problems.append(f"{where}: {requirement_text!r} is not an exact name==version pin")
            continue
        try:
            version = Version(specs[0].version)
        except InvalidVersion:
            problems.append(f"{where}: {specs[0].version!r} is not a version")
            continue
        if not options:
            problems.append(f"{where}: {requirement.name} has no --hash=sha256: {FIX}")
            continue
        pins.append(
            Pin(
                name=canonicalize_name(requirement.name),
                version=version,
                marker=requirement.marker,
                hashes=tuple(option.split(":", 1)[1] for option in options),
                line=number,
            )
        )
    return pins, problems


def _applicable(
    pins: Sequence[Pin], env: Environment, label: str
) -> tuple[dict[NormalizedName, Pin], list[str]]:
    chosen: dict[NormalizedName, Pin] = {}
    problems = []
    for pin in pins:
        if not pin.applies(env):
            continue
        if pin.name in chosen:
            first = chosen[pin.name]
            problems.append(
                f"{label}: {pin.name} is pinned twice for this environment "
                f"(lines {first.line} and {pin.line}): {FIX}"
            )
            continue
        chosen[pin.name] = pin
    return chosen, problems


def _marker_holds(requirement: Requirement, env: Environment, extras: frozenset[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(
        requirement.marker.evaluate({**env, "extra": extra}) for extra in sorted(extras | {""})
    )


def _satisfied(
    requirement: Requirement, chosen: Mapping[NormalizedName, Pin], why: str, label: str
) -> list[str]:
    name = canonicalize_name(requirement.name)
    pin = chosen.get(name)
    if pin is None:
        return [f"{why} {str(requirement)!r}, but {label} has no pin for {name}: {FIX}"]
    if not requirement.specifier.contains(pin.version, prereleases=True):
        return [
            f"{why} {str(requirement)!r}, but {label} pins {name}=={pin.version} "
            f"(line {pin.line}), outside it: {FIX} (scripts/lock.sh --upgrade-package {name})"
        ]
    return []


def check_requirements(
    requirements: Sequence[str], pins: Sequence[Pin], env: Environment, source: str, label: str
) -> list[str]:
    """Every requirement (whose marker holds here) has a pin in the lock inside its specifier."""
    chosen, problems = _applicable(pins, env, label)
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement as exc:
            problems.append(f"{source}: {text!r} is not a requirement ({exc})")
            continue
        if _marker_holds(requirement, env, frozenset()):
            problems += _satisfied(requirement, chosen, f"{source} requires", label)
    return problems


def check_closed(
    roots: Sequence[str], pins: Sequence[Pin], env: Environment, installed: Installed, label: str
) -> list[str]:
    """The pins reached from ``roots`` through their metadata are all in the lock, and
    every pin that applies here is reached."""
    chosen, problems = _applicable(pins, env, label)
    asked: dict[NormalizedName, frozenset[str]] = {}
    queue: list[tuple[Requirement, str]] = []
    for text in roots:
        try:
            root = Requirement(text)
        except InvalidRequirement as exc:
            problems.append(f"pyproject.toml: {text!r} is not a requirement ({exc})")
            continue
        if _marker_holds(root, env, frozenset()):
            queue.append((root, "pyproject.toml requires"))
    while queue:
        requirement, why = queue.pop()
        found = _satisfied(requirement, chosen, why, label)
        problems += found
        name = canonicalize_name(requirement.name)
        if found:
            continue
        extras = frozenset(requirement.extras)
        if name in asked and extras <= asked[name]:
            continue
        extras |= asked.get(name, frozenset())
        asked[name] = extras
        pin = chosen[name]
        metadata = installed(name)
        if metadata is None:
            problems.append(
                f"{name}=={pin.version} is not installed here, so its dependencies cannot be "
                f"checked: install the lock first (pip install --require-hashes --no-deps "
                f"-r {label})"
            )
            continue
        version, requires = metadata
        if version != pin.version:
            problems.append(
                f"{name} {version} is installed here but {label} pins {pin.version} "
                f"(line {pin.line}): install the lock first, or, if another requirement "
                f"forced {version}, {FIX}"
            )
            continue
        for line in requires:
            dependency = Requirement(line)
            if _marker_holds(dependency, env, extras):
                queue.append((dependency, f"{name}=={pin.version} requires"))
    if problems:
        return problems  # "stale" needs a whole walk: a gap hides what lies behind it
    for name, pin in sorted(chosen.items()):
        if name not in asked:
            problems.append(
                f"{label} line {pin.line}: {name}=={pin.version} is required by nothing "
                f"(stale): {FIX}"
            )
    return problems


def installed_here(name: NormalizedName) -> tuple[Version, list[str]] | None:
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    return Version(dist.version), list(dist.requires or [])


def check(root: Path, env: Environment, installed: Installed) -> list[str]:
    """All problems with the two lock files of the project at ``root``."""
    with (root / "pyproject.toml").open("rb") as f:
        pyproject = tomllib.load(f)
    runtime: list[str] = pyproject["project"]["dependencies"]
    build: list[str] = pyproject["build-system"]["requires"]
    problems = []
    for label, requirements, source in (
        (RUNTIME_LOCK, runtime, "pyproject.toml [project].dependencies"),
        (BUILD_LOCK, build, "pyproject.toml [build-system].requires"),
    ):
        path = root / label
        if not path.is_file():
            problems.append(f"{label} is missing: {FIX}")
            continue
        pins, found = parse_lock(path.read_text("utf-8"), label)
        problems += found
        problems += check_requirements(requirements, pins, env, source, label)
        if label == RUNTIME_LOCK:
            problems += check_closed(runtime, pins, env, installed, label)
    # the same message can arise twice (a requirement and the closure walk)
    return list(dict.fromkeys(problems))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args(argv)
    env = {key: str(value) for key, value in default_environment().items()}
    problems = check(args.root, env, installed_here)
    for problem in problems:
        print(f"lock check: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(
        f"lock check: {RUNTIME_LOCK} and {BUILD_LOCK} satisfy pyproject.toml; "
        f"{RUNTIME_LOCK} is closed for python {env['python_full_version']} "
        f"on {env['sys_platform']} {env['platform_machine']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
