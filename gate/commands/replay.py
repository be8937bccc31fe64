"""``review-gate replay``: ask again for recorded diffs and compare the verdicts."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command imports what it uses when it runs (docs/extending.md)
    from gate.config.model import Config

NAME = "replay"
ORDER = 35
HELP = "re-review recorded diffs on a fresh connection; stable / unstable / degraded"
DESCRIPTION = """\
Re-review the diff of each certificate on a fresh connection and compare the verdict
with the recorded one. The diff comes from --diff FILE (one certificate) or from
--diff-dir DIR holding <diff_sha>.diff files; its bytes must still hash to the
recorded diff_sha. The reviewer settings come from the certificate; --config and the
reviewer flags override them, as for review.

Each certificate gets a row: stable (same verdict), unstable (the verdict changed),
degraded (the recorded decision came from a repair, an override, a cached decision
or partial coverage: audit it), unreplayable (diff changed or missing, prompt
differs, reviewer unreachable).

exit codes: 0 all stable (or degraded), 1 any unstable, 2 usage error, 3 any unreplayable.
"""

# CLI option (dest) -> the kebab-case input name gate.config.inputs.apply_inputs knows
_OVERRIDES = {
    "provider": "provider",
    "model": "model",
    "base_url": "base-url",
    "api_key_env": "api-key-env",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("certificates", nargs="+", metavar="CERTIFICATE")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--diff", metavar="FILE", help="the diff of the one certificate")
    source.add_argument("--diff-dir", metavar="DIR", help="a folder of <diff_sha>.diff files")
    parser.add_argument("--config", metavar="PATH", help="a review-gate YAML config file")
    parser.add_argument("--provider", help="override the certificate's provider")
    parser.add_argument("--model", help="override the certificate's model")
    parser.add_argument("--base-url", metavar="URL", help="override the certificate's base URL")
    parser.add_argument(
        "--api-key-env", metavar="NAME", help="environment variable that holds the API key"
    )


def _diff_for(args: argparse.Namespace, diff_sha: str) -> bytes | None:
    from gate.commands._io import read_input
    from gate.commands.review import MAX_DIFF_FILE_BYTES

    if args.diff is not None:
        return read_input(args.diff, what="diff", limit=MAX_DIFF_FILE_BYTES)
    path = Path(args.diff_dir) / f"{diff_sha}.diff"
    if not path.is_file():
        return None
    return read_input(str(path), what="diff", limit=MAX_DIFF_FILE_BYTES)


def missing_diff(looked: Path) -> str:
    """The note for a certificate whose diff is not in ``--diff-dir``."""
    others = sorted(p.name for p in looked.parent.glob("*.diff"))[:3]
    there = f" (the folder holds {', '.join(others)})" if others else " (the folder holds no .diff)"
    return (
        f"diff missing: no file {str(looked)!r}{there}; name each diff <diff_sha>.diff, "
        "the full SHA-256 the certificate records"
    )


def run(args: argparse.Namespace) -> int:
    from gate.commands._io import read_input, say
    from gate.commands._options import with_hints
    from gate.commands.review import api_key_for, usage_from
    from gate.config.load import load_config
    from gate.config.model import default_config
    from gate.errors import ConfigError, UsageError
    from gate.memory import replay

    with_hints(lambda: None, provider=args.provider, base_url=args.base_url)
    if args.diff is not None and len(args.certificates) != 1:
        raise UsageError("--diff FILE takes one certificate; use --diff-dir DIR for several")
    if args.diff_dir is not None and not Path(args.diff_dir).is_dir():
        raise UsageError(f"--diff-dir {args.diff_dir!r} is not a folder")
    try:
        base: Config = load_config(args.config) if args.config else default_config()
    except ConfigError as err:
        raise usage_from(err) from err
    overrides = {
        name: str(getattr(args, dest))
        for dest, name in _OVERRIDES.items()
        if getattr(args, dest) is not None
    }
    rows = []
    for name in args.certificates:
        data = read_input(name, what="certificate", limit=64 * 1024 * 1024)
        try:
            recorded = replay.from_certificate(data, name)
        except replay.ReplayError as err:
            rows.append(replay.unreplayable(name, hashlib.sha256(data).hexdigest(), err.message))
            continue
        try:
            config = replay.config_for(recorded, base, overrides)
            api_key = api_key_for(config, explicit_env=args.api_key_env is not None)
        except ConfigError as err:
            raise usage_from(err) from err
        diff = _diff_for(args, recorded.diff_sha)
        if diff is None:  # --diff-dir without <diff_sha>.diff: name the file looked for
            looked = Path(args.diff_dir) / f"{recorded.diff_sha}.diff"
            was = recorded.verdict or recorded.state
            note = missing_diff(looked)
            rows.append(
                replay.Row(name, recorded.diff_sha, was, "-", replay.Outcome.UNREPLAYABLE, note)
            )
            continue
        rows.append(replay.replay_one(recorded, diff, config, api_key=api_key))
    say(replay.table(rows))
    return replay.exit_code(rows)
