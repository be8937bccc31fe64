# review-gate: the GitHub Action's container.
#
# Small, boring and reproducible: a Python slim base pinned by digest (a build argument,
# so a mirror or a local stand-in can be used), a virtual environment built in a
# throwaway stage from hashed lock files only, and a final stage that holds only the
# base image and that environment (no compilers, no pip, no sources). GitHub runs Docker
# actions as root and forbids USER; it sets the working directory itself, so there is
# no WORKDIR. Refresh the digest and the locks as docs/releasing.md says.
ARG BASE_IMAGE=python:3.12-slim@sha256:78387bc3881b8273120a12ebe6c1ab22b018ccc2c9adf565ae1ac9b536e184ea

FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
# binutils for strip: the wheels' shared objects carry symbol tables the gate never
# needs (about 9 MB of the image; Debian strips its own packages the same way).
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils \
 && rm -rf /var/lib/apt/lists/*
# The context holds only what .dockerignore allows (pyproject.toml, README.md, gate/
# and the two lock files).
COPY requirements.lock requirements-build.lock /src/
# Two environments: /opt/build holds pip and the locked build backend; /opt/venv, the
# one that ships, is made without pip and filled by /opt/build's pip (--python).
# Runtime dependencies: exactly the locked files (each checked against its sha256),
# wheels only, nothing resolved here.
RUN python3 -m venv /opt/build \
 && python3 -m venv --without-pip /opt/venv \
 && /opt/build/bin/pip --python /opt/venv/bin/python install \
      --require-hashes --no-deps --only-binary :all: -r /src/requirements.lock
COPY pyproject.toml README.md /src/
COPY gate /src/gate
# The project itself: its wheel is built by the locked build backend (no build
# isolation, so nothing unhashed is fetched), then installed byte-compiled with
# --no-deps. pip check proves the locked set is closed. The tests shipped inside
# dependencies go and the shared objects are stripped; then every module the gate uses
# must still import. Nothing in the final image can fetch or build code.
RUN /opt/build/bin/pip install --require-hashes --no-deps --only-binary :all: \
      -r /src/requirements-build.lock \
 && /opt/build/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /src/dist /src \
 && /opt/build/bin/pip --python /opt/venv/bin/python install --no-deps --no-index \
      /src/dist/*.whl \
 && /opt/build/bin/pip --python /opt/venv/bin/python check \
 && rm -rf /opt/venv/lib/python3*/site-packages/*/tests \
 && find /opt/venv -name '*.so' -exec strip --strip-unneeded {} + \
 && /opt/venv/bin/python -c "import gate.cli, gate.action.run, gate.serve.life, github, httpx, jsonschema, cmarkgfm, yaml; \
      import cryptography.hazmat.primitives.asymmetric.ed25519; \
      assert yaml.__with_libyaml__" \
 && /opt/venv/bin/review-gate --version

FROM ${BASE_IMAGE}
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
ENTRYPOINT ["/opt/venv/bin/review-gate", "action"]
