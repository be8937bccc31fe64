"""``review-gate backtest``: the review the action runs, over past merges or labelled cases.

Read top-down, in the order the modules depend on each other:

* :mod:`~gate.backtest.cases`: the cases, from git history or a JSON Lines file;
* :mod:`~gate.backtest.headfiles`: ``context: files``, the changed files' text at a
  commit, from git (``review`` reads it here too);
* :mod:`~gate.backtest.rates`: Wilson intervals, the exact McNemar test, percentiles, and
  the one definition of each rate (``review-gate stats --shadow`` uses it too);
* :mod:`~gate.backtest.runner`: every case under every config through the review
  pipeline, the whole backtest's cost bound, the shared Retry-After pause, resumable;
* :mod:`~gate.backtest.report`: the rates per config, the paired comparison, the terminal
  and Markdown reports;
* :mod:`~gate.backtest.html`: the self-contained HTML report with its SVG chart;
* :mod:`~gate.backtest.progress`: the progress line.

An index: each name is imported from its own module.
"""
