# review-gate: the GitHub Action's container.
#
# Small and boring: a Python slim base (a build argument, so a mirror or a pinned digest
# can be used), a virtual environment built in a throwaway stage, and a final stage that
# holds only the base image and that environment (no compilers, no pip cache, no
# sources). GitHub runs Docker actions as root and forbids USER; it sets the working
# directory itself, so there is no WORKDIR.
ARG BASE_IMAGE=python:3.12-slim

FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN python3 -m venv /opt/venv
# The context holds only what .dockerignore allows (pyproject.toml, README.md, gate/).
COPY . /src/
# Install the project (byte-compiled, for a fast start), then drop the installers:
# nothing in the final image can fetch or build code.
RUN /opt/venv/bin/pip install /src \
 && /opt/venv/bin/pip uninstall --yes pip setuptools wheel \
 && /opt/venv/bin/review-gate --version

FROM ${BASE_IMAGE}
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
ENTRYPOINT ["/opt/venv/bin/review-gate", "action"]
