"""The GitHub adapter: every REST call the action makes, in these modules.

* :mod:`~gate.action.github.http`: the HTTP policy (settings, one retry policy and
  timeout, the exact-bytes GET, every failure a typed ``GitHubError``);
* :mod:`~gate.action.github.records`: the typed records GitHub's answers become;
* :mod:`~gate.action.github.mark`: the gate's mark on what it posts (kind, question, count);
* :mod:`~gate.action.github.pull`: reading a pull request (which bytes get reviewed);
* :mod:`~gate.action.github.write`: statuses, the sticky comment and the tracking issue;
* :mod:`~gate.action.github.client`: ``GitHubClient``, the reads and the writes together;
* :mod:`~gate.action.github.sdk`: PyGithub, imported at its first call (the one place).

An index: each name is imported from its own module.
"""
