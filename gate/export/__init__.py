"""What the gate hands to tools downstream, in their own standard formats.

- :mod:`gate.export.statement`: an in-toto Statement v1 of each decision, built from the
  certificate's bytes alone (so it names exactly what is on disk), for ``actions/attest``
  to sign and ``gh attestation verify`` to check; and the offline check that a statement
  names a given certificate, diff and decision (``review-gate verify --statement``);
- :mod:`gate.export.sarif`: the findings as one SARIF 2.1.0 run, for code scanning.

Both are written after the certificate; neither can change a decision (a file that
cannot be written is reported, the decision stands).
"""
