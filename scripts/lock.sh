#!/usr/bin/env bash
# Regenerate the hashed lock files the action's image is built from:
#   requirements.lock        the runtime dependencies ([project].dependencies), closed
#   requirements-build.lock  the build backend ([build-system].requires)
# Both are universal (one file for every Python >= 3.11, amd64 and arm64, the markers
# decide) and carry a sha256 for every file of each pinned version, so
# `pip install --require-hashes --no-deps -r requirements.lock` installs exactly these bytes.
#
# usage: scripts/lock.sh [--upgrade]     (run from anywhere; needs python3 >= 3.11)
# .ci/run checks with scripts/check_lock.py that the locks still satisfy pyproject.toml.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
UV_VERSION=0.13.9   # the resolver version is part of the command: bump it on purpose
python=${PYTHON:-python3}

tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
"$python" -m venv "$tools/venv"
"$tools/venv/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
uv=("$tools/venv/bin/uv" pip compile --universal --python-version 3.11 --generate-hashes
    --no-config --quiet --custom-compile-command "scripts/lock.sh" "$@")

"${uv[@]}" pyproject.toml -o requirements.lock
"$python" - <<'PY' > "$tools/build.in"
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))
PY
"${uv[@]}" "$tools/build.in" -o requirements-build.lock
# uv names its input file in the via comments; a temporary path would change every run
sed -i "s|$tools/build.in|build-system.requires|g" requirements-build.lock
echo "wrote requirements.lock and requirements-build.lock (uv $UV_VERSION)"
