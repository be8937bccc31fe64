"""What a reviewer option should have been: the hints a newcomer's first mistakes get.

The config's own validation says what is wrong with a value; this module says what the
person most likely meant, in the command line's words, before anything is sent:

* :func:`provider_problem`: ``--provider claude`` means ``anthropic``, ``azure``
  ``azure-openai``, ``google`` ``gemini`` or ``vertex``, and Ollama or any other
  OpenAI-compatible server ``openai`` with ``--base-url``;
* :func:`base_url_problem`: ``--base-url 127.0.0.1:8080/v1`` means
  ``http://127.0.0.1:8080/v1`` (a local server) or ``https://`` (any other host);
* :func:`endpoint_problems`: a cloud provider without its region or location, and
  the missing key, reported in one run rather than one per try.

:func:`with_hints` puts the first two in place of the config's own line for the option,
beside every other problem found (all at once). Nothing here reads the network.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from gate.config.model import Config

T = TypeVar("T")


def provider_problem(value: str | None) -> str | None:
    """Why ``--provider`` names no provider, with the one it most likely meant; else None."""
    from gate.providers import LOCAL_OPENAI_URL, PROVIDERS, meant_provider

    if value is None or value in PROVIDERS:
        return None
    meant = meant_provider(value)
    compatible = f"--provider openai --base-url {LOCAL_OPENAI_URL}"
    if meant is None:
        fix = (
            f"pass one of --provider {' | '.join(PROVIDERS)} (any OpenAI-compatible server: "
            f"{compatible})"
        )
    else:
        names, with_url = meant
        said = " or ".join(f"--provider {name}{_WHO.get(name, '')}" for name in names)
        fix = f"did you mean {compatible if with_url else said}?"
    return f"--provider {value!r} is not a provider (one of {', '.join(PROVIDERS)}); {fix}"


#: which service a provider is, where two are offered for one name ("google")
_WHO = {"gemini": " (Google AI Studio)", "vertex": " (Google Cloud)"}


def _local(host: str) -> bool:
    if host in ("localhost", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def base_url_problem(value: str | None) -> str | None:
    """Why ``--base-url`` has no scheme, naming the URL it most likely meant (``http://``
    for a local or private host, else ``https://``); None when it has one."""
    from urllib.parse import urlsplit

    if value is None or "://" in value or not value.strip():
        return None
    text = value.strip().lstrip("/")
    try:
        host = urlsplit(f"//{text}").hostname or ""
    except ValueError:
        host = ""
    scheme = "http" if _local(host) else "https"
    return f"--base-url {value!r} has no scheme; did you mean --base-url {scheme}://{text}?"


def with_hints(load: Callable[[], T], *, provider: str | None, base_url: str | None) -> T:
    """Run ``load`` (the config and the options), telling what a wrong ``--provider`` or
    ``--base-url`` most likely meant in place of the config's own line for it, beside
    every other problem found in the same pass (all reported at once)."""
    from gate.errors import UsageError

    hints = [h for h in (provider_problem(provider), base_url_problem(base_url)) if h]
    try:
        loaded = load()
    except UsageError as err:
        if not hints:
            raise
        named = tuple(f"{option}:" for option, given in (("--provider", provider),
                      ("--base-url", base_url)) if given is not None)  # fmt: skip
        rest = [line for line in err.message.splitlines() if not line.startswith(named)]
        raise UsageError("\n".join([*hints, *rest]), reason=err.reason) from err
    if hints:
        raise UsageError("\n".join(hints), reason="config_invalid_input")
    return loaded


def endpoint_problems(config: Config) -> list[str]:
    """Every reason the reviewer cannot be reached as configured, all at once: a cloud
    provider without its region (bedrock) or location (vertex), then the missing key."""
    from gate.providers import Provider, cloud_base_url

    rev = config.reviewer
    problems: list[str] = []
    endpoint = rev.base_url or cloud_base_url(
        rev.provider, region=rev.region, location=rev.location, environ=os.environ
    )
    if not endpoint and rev.provider == Provider.BEDROCK:
        problems.append(
            "--provider bedrock needs an AWS region: pass --region REGION or export AWS_REGION "
            "(e.g. us-east-1), or give --base-url"
        )
    elif not endpoint and rev.provider == Provider.VERTEX:
        problems.append(
            "--provider vertex needs a location: pass --location LOCATION (e.g. us-east5 or "
            "global) and --project ID, or give --base-url"
        )
    if problems and rev.provider != Provider.MC1:
        env_name = rev.key_env()
        if not os.environ.get(env_name, "").strip():
            problems.append(f"{env_name} is not set; export it or pass --api-key-env NAME")
    return problems
