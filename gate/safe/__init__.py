"""Where the input, secret and text classes live; every other module uses them.

* :mod:`~gate.safe.strictjson`: the one strict JSON loader every parser entry point uses;
* :mod:`~gate.safe.redact`: the registered secrets, redacted by every sink before any cut;
* :mod:`~gate.safe.untrusted`: reviewer, provider and GitHub text rendered inert;
* :mod:`~gate.safe.atomic`: verified atomic writes;
* :mod:`~gate.safe.tls`: the one verifying TLS context of the process.

An index: each name is imported from its own module.
"""
