"""review-gate: a merge gate that never turns an error into a pass."""

__version__ = "0.1.0"

#: How the gate names itself to reviewers and to GitHub.
USER_AGENT = f"review-gate/{__version__}"
#: the project's one URL (pyproject's Source): every link the gate writes is built from it
REPOSITORY_URL = "https://github.com/review-gate/review-gate"
#: where a link to one of the project's files points (its main branch)
FILES_URL = f"{REPOSITORY_URL}/blob/main"
