"""The GitHub Action front end: event, inputs, GitHub API, reports, orchestration.

See docs/design.md's module map.
"""
