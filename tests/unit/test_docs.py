"""The documentation stays true to the files it describes.

- docs/action.md's inputs and outputs are what scripts/gen_action_docs.py renders from
  action.yml (run the script after changing action.yml);
- the README's quick-start workflow is examples/review-gate-minimal.yml, verbatim, and the
  README stays short (the reference is in docs/);
- every relative link (and its #anchor) in the README, CONTRIBUTING.md and docs/ (the
  decision records included) resolves;
- docs/design.md's module map (a folder tree) names every module of gate/, and only those;
- the README's set-up commands are the ones .ci/run runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from scripts.gen_action_docs import BEGIN, END, load_action, render, tables

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").rglob("*.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^ *(```|~~~).*?^ *\1", re.MULTILINE | re.DOTALL)


def test_action_md_is_generated_from_action_yml() -> None:
    doc = (ROOT / "docs" / "action.md").read_text("utf-8")
    action = load_action(ROOT / "action.yml")
    assert doc == render(doc, action), "docs/action.md is stale: run scripts/gen_action_docs.py"
    # every input and output, with its default, is in the generated part
    generated = doc[doc.index(BEGIN) : doc.index(END)]
    for name, spec in action["inputs"].items():
        default = spec["default"] or '""'
        assert f"| `{name}` | `{default}` |" in generated, name
    for name in action["outputs"]:
        assert f"| `{name}` |" in generated, name


def test_render_replaces_only_the_generated_part() -> None:
    action = {"inputs": {"x": {"description": "a | b", "default": ""}}, "outputs": {}}
    doc = f"hand text\n{BEGIN}\nold\n{END}\nmore hand text\n"
    out = render(doc, action)
    assert out == f"hand text\n{BEGIN}\n{tables(action)}{END}\nmore hand text\n"
    assert "a \\| b" in out
    with pytest.raises(SystemExit):
        render("no markers\n", action)


def _yaml_blocks(text: str) -> list[str]:
    blocks = re.findall(r"^( *)```yaml\n(.*?)^\1```", text, flags=re.MULTILINE | re.DOTALL)
    return ["\n".join(line[len(indent) :] for line in body.splitlines()) for indent, body in blocks]


MINIMAL = ROOT / "examples" / "review-gate-minimal.yml"
#: the README's limit (issue 34): the reference lives in docs/
README_MAX_BYTES = 12 * 1024
#: the minimal workflow's limit (issue 34: a user needs three inputs, three permissions)
MINIMAL_MAX_LINES = 25


def test_readme_shows_the_minimal_workflow_verbatim() -> None:
    """The quick start's workflow is examples/review-gate-minimal.yml, byte for byte (its
    comments included: they carry the secret and branch protection steps), and the only
    whole workflow the README shows."""
    readme = (ROOT / "README.md").read_text("utf-8")
    workflows = [
        block
        for block in _yaml_blocks(readme)
        if isinstance(loaded := yaml.safe_load(block), dict) and "jobs" in loaded
    ]
    assert [w.rstrip("\n") for w in workflows] == [MINIMAL.read_text("utf-8").rstrip("\n")]
    quick_start = readme.index("## Quick start")
    assert (
        quick_start
        < readme.index("review-gate-minimal.yml")
        < readme.index("examples/review-gate.yml")
    )


def test_the_minimal_workflow_is_short_and_says_every_step() -> None:
    text = MINIMAL.read_text("utf-8")
    assert len(text.splitlines()) <= MINIMAL_MAX_LINES
    workflow = yaml.safe_load(text)
    assert workflow["permissions"] == {}
    [job] = workflow["jobs"].values()
    assert job["permissions"] == {
        "contents": "write",  # the config at the base commit; the question ledger (a ref)
        "pull-requests": "write",
        "statuses": "write",
    }
    [step] = job["steps"]
    assert step["with"] == {
        "provider": "openai",
        "model": "gpt-4o-mini",
        "api-key": "${{ secrets.OPENAI_API_KEY }}",
    }
    # the two steps outside the file: the secret and branch protection
    assert "gh secret set OPENAI_API_KEY" in text
    assert "Require status checks to pass > review-gate" in text


def test_readme_is_short() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes: move reference into docs/"


def _released() -> bool:
    changelog = (ROOT / "CHANGELOG.md").read_text("utf-8")
    return re.search(r"^## \[\d+\.\d+\.\d+\]", changelog, flags=re.MULTILINE) is not None


def test_readme_says_v1_is_not_published_and_shows_the_path_that_works() -> None:
    """Until a release exists, @v1 resolves to nothing: the README says so before the
    workflow, shows the full-SHA pin and what building the image in the job costs."""
    readme = (ROOT / "README.md").read_text("utf-8")
    quick_start = readme[readme.index("## Quick start") :]
    if _released():
        assert "is not published yet" not in readme, "v1 exists: drop the README's note"
        return
    note = quick_start[: quick_start.index("```yaml")]
    assert "`v1` is not published yet" in note
    assert "uses: review-gate/review-gate@<40-hex-sha>" in note
    assert "git ls-remote https://github.com/review-gate/review-gate" in note
    assert re.search(r"\*\*\d+ s\*\*", note), "the measured cost of building the image"
    assert "docs/container.md#the-quick-start-under-act" in note


def test_ci_lints_the_minimal_workflow() -> None:
    """.ci/run hands the minimal workflow to zizmor and to GitHub's workflow schema."""
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    found = re.search(r"^workflows=\((.*)\)$", ci, flags=re.MULTILINE)
    assert found is not None
    listed = {str(p.relative_to(ROOT)) for g in found.group(1).split() for p in ROOT.glob(g)}
    assert "examples/review-gate-minimal.yml" in listed
    assert 'zizmor --offline --config .github/zizmor.yml "${workflows[@]}"' in ci
    assert 'check-jsonschema --builtin-schema vendor.github-workflows "${workflows[@]}"' in ci


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCED.sub("", path.read_text("utf-8"))
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    text = FENCED.sub("", doc.read_text("utf-8"))
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file_part, _, anchor = target.partition("#")
        path = (doc.parent / file_part).resolve() if file_part else doc
        assert path.exists(), f"{doc.name}: link to {target}: no such file"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{doc.name}: link to {target}: no such heading"


TREE_LINE = re.compile(r"^( *)(\S+(?:, \S+)*)(?: {2,}\S.*)?$")


def module_map(design: str) -> set[str]:
    """The modules docs/design.md's module map names: the first fenced block after its
    "## Module map" heading is the folder tree (``gate/`` at the top, two spaces a level;
    a name ending in ``/`` is a folder, several modules may share a line, comma-separated,
    and the rest of a line after two spaces is what the module owns)."""
    section = design[design.index("## Module map") :]
    block = section[section.index("```\n") + 4 :]
    block = block[: block.index("```")]
    folders: list[str] = []
    named: set[str] = set()
    for line in block.splitlines():
        match = TREE_LINE.match(line)
        assert match, f"docs/design.md's module map: cannot read {line!r}"
        indent, names = len(match[1]), match[2].split(", ")
        assert indent % 2 == 0, f"docs/design.md's module map: odd indent in {line!r}"
        assert indent // 2 <= len(folders), f"docs/design.md's module map: no folder for {line!r}"
        del folders[indent // 2 :]
        if names[0].endswith("/"):
            folders.append(names[0].rstrip("/"))
        else:
            named.update("/".join([*folders, name]) for name in names)
    return named


def test_module_map_reads_a_tree() -> None:
    tree = (
        "## Module map\n\n```\ngate/\n"
        "  a.py  one\n  sub/  two\n    b.py, c.py  three\n  d.py\n```\n"
    )
    assert module_map(tree) == {"gate/a.py", "gate/sub/b.py", "gate/sub/c.py", "gate/d.py"}


def test_design_names_every_module() -> None:
    named = module_map((ROOT / "docs" / "design.md").read_text("utf-8"))
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "gate").rglob("*.py")}
    assert modules
    missing = sorted(modules - named)
    assert missing == [], f"docs/design.md's module map does not name {missing}"
    stale = sorted(name for name in named - modules if name.endswith(".py"))
    assert stale == [], f"docs/design.md's module map names modules that do not exist: {stale}"


def test_readme_setup_commands_are_the_ci_commands() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    # command 1 installs the package alone (issue 20: seconds, not minutes); command 2
    # installs the test extras itself
    demo = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/review-gate demo"
    assert demo in readme
    assert "[test]" not in readme[: readme.index("bash .ci/run")]
    assert "bash .ci/run" in readme
    assert ".venv/bin/pip install -q -e '.[test]'" in ci
    assert ".venv/bin/review-gate demo" in ci
    for command in ("npm ci --prefix tests/node", ".venv/bin/python -m pytest"):
        assert command in ci
        assert command in readme
    # the two set-up commands come first, before the quick start
    assert readme.index("bash .ci/run") < readme.index("## Quick start")
