"""``review-gate serve``: a reviewer service that seals and signs MC1 at the source.

The gate's ``mc1`` provider calls it; it forwards the prompt to an OpenAI-compatible
model server (vLLM, llama.cpp, Ollama's ``/v1``), reads the answer with the gate's own
completeness machinery (:func:`gate.reviewers.transport.call_once`: the end marker, the
finish reason, the prompt tokens read) and answers with an MC1 envelope signed with
Ed25519 (:mod:`gate.decide.signature`), or with an HTTP error the gate classifies as the
upstream's end (:mod:`gate.serve.upstream`). An index; each name lives in its module:

* :mod:`~gate.serve.config`: :class:`ServeConfig`, the token and its checks;
* :mod:`~gate.serve.keys`: the signing key, made (``--new-key``) and read;
* :mod:`~gate.serve.door`: the front door every local server shares (``Host``,
  ``Origin``, the body's length), ``demo --serve`` included;
* :mod:`~gate.serve.probe`: ``GET /models`` at start-up and for ``/healthz``;
* :mod:`~gate.serve.upstream`: one question forwarded, its answer sealed or refused;
* :mod:`~gate.serve.cancel`: cutting an upstream exchange whose client left;
* :mod:`~gate.serve.handler`: the HTTP handler and server (authentication, limits);
* :mod:`~gate.serve.service`: the token check, the slots, the in-flight requests, drain;
* :mod:`~gate.serve.life`: start-up checks, serving, the graceful stop.

It reads ``reviewers/`` and ``decide/``; nothing imports it but ``commands/`` and
``lab/`` (the demo's reviewer shares the front door).
"""
