"""Evidence the reviewer read every part of the prompt: four words the verdict repeats.

The gate proves the answer arrived whole and bound; a server can still have cut the
question. Ollama keeps the last ``num_ctx`` tokens (the head goes), a truncating server
keeps the first (the tail goes), llama.cpp's context shift drops a middle region, and
some chat templates drop the system message, where the whole output contract lives. An
honest model that saw part of the prompt answers a bound, confident pass about that part.

So each prompt carries four **read words**, one in each part a server can lose
(:data:`PARTS`): the end of the system message, the head of the user message (with the
binding, before the diff), the middle of the diff (the diff is shown in two fenced parts
with the word between them) and the end of the user message (after the diff and the
instructions). Each is a line ``"read": {"PART": "WORD"}`` (:func:`marker`), and the
verdict's ``read`` member repeats the four as one object, ``{"system": "WORD", "head":
"WORD", "middle": "WORD", "tail": "WORD"}``: each word follows the same text in the
prompt and in the answer, which a small model copies far better than words it must
gather into one string (measured: docs/decisions/0049-read-words.md). A model can only
know a word by reading the part that holds it.

The words are drawn from :data:`WORDS` (256 short common English words: a small model
copies a word more reliably than hex) by SHA-256 of the binding (``diff_sha``,
``policy_version``) and the part's name (:func:`words_for`), so the prompt, and its
digest, stays a pure function of the question. Whoever knows the binding can compute
them: the evidence is that the words reached the model, not that they are secret. But
the author writes the diff, and needs only one byte of its SHA-256: a comment varied
about 256 times puts a part's own word beside the part's name in the diff, where a model
whose server cut that part still reads it. So :func:`forged_parts` looks for each part's
word beside its name in the text the author writes (the diff, the files shown, the
instructions, the scope), and the prompt that holds one is not sent (``read_word_forged``,
:func:`gate.review.prompt.build_prompt`); an honest text meets that 1 time in 256 per
marker-shaped line, and any change of the diff changes the words. A model that missed
one part guesses its word with probability 1/256; one that missed every part, 256^-4.

:func:`check_read` compares the member with the binding's words and raises
:class:`~gate.errors.PromptUnread` naming each part whose word is missing, and the fix.
What the words cannot see: a server that drops a region between two markers (a piece of
one half of the diff) and reports no prompt tokens (docs/reviewers.md says so).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping

from gate.errors import PromptUnread
from gate.safe.redact import redact

_VOCABULARY = """
apple arrow autumn bag ball band bank barn basket bean bear bed bell bird boat bone book
boot bottle bowl box bread brick bridge brush bucket cake camera candle car card carpet cat
chair chalk cheese cherry chest chicken circle city cloud coat coffee coin corn cotton cow
crown cup curtain desk dinner dog door dragon dream dress drum duck eagle earth egg engine
eye face farm feather fence field finger fire fish flag flower fog foot forest fork fox
frog garden gate gift glass glove goat gold grape grass guitar hammer hand hat heart hill
honey horse house ice island jacket jar jelly kettle key king kite knife ladder lake lamp
leaf lemon letter lion lock map market meadow milk mirror monkey moon mountain mouse music
nail needle nest night ocean onion orange owl paint palace paper parrot pear pencil pepper
piano picture pillow planet plate pocket pond potato queen rabbit radio rain ribbon ring
river road robot rock roof rope rose salt sand school sea seed shadow sheep shell ship
shirt shoe silver sky snake snow sock soup spoon star stone storm street sugar summer sun
table tiger toast tomato tower town train tree truck tunnel turtle umbrella valley violin
wagon wall watch water whale wheel window winter wolf wood yard zebra anchor banana beach
blanket button cabin canoe castle cliff clock comet copper crystal daisy desert dolphin
feast flute garlic glacier hammock harbor helmet jungle lantern lizard magnet maple marble
melon mitten muffin noodle oyster paddle panda pebble penguin pickle pigeon pirate pizza
"""
#: The vocabulary: 256 distinct short common English words, lower-case ASCII letters only
#: (one byte of SHA-256 picks one). Changing it changes every prompt's digest.
WORDS: tuple[str, ...] = tuple(_VOCABULARY.split())

#: The parts of a prompt a server can lose: the members of ``read``, in the order written.
PARTS = ("system", "head", "middle", "tail")
#: Each part as the messages name it.
PART_NAMES = {
    "system": "the system message",
    "head": "the head of the user message (before the diff)",
    "middle": "the middle of the diff (between its two fenced parts)",
    "tail": "the end of the user message (after the diff)",
}

_MARKER = re.compile(r'^"read": \{"(system|head|middle|tail)": "([a-z]+)"\}$', re.MULTILINE)


def words_for(diff_sha: str, policy_version: str) -> dict[str, str]:
    """The read words of the prompt bound to ``diff_sha`` and ``policy_version``: one per
    part of :data:`PARTS`, in that order."""
    words = {}
    for part in PARTS:
        material = "\0".join(("review-gate read/1", diff_sha, policy_version, part))
        words[part] = WORDS[hashlib.sha256(material.encode("utf-8")).digest()[0]]
    return words


def marker(part: str, words: Mapping[str, str]) -> str:
    """The line that carries ``part``'s word of ``words`` (:func:`words_for`) in the
    prompt, written as the verdict's ``read`` member writes it, so a model copies the
    word after the same text in both places (read back by :func:`words_in`)."""
    return f'"read": {{{json.dumps(part)}: {json.dumps(words[part])}}}'


def words_in(text: str) -> dict[str, str]:
    """The ``read`` member an honest reviewer writes having seen ``text`` (the prompt as it
    reached it, both messages): the word of each part whose marker it saw, ``""`` for a
    part it did not see. For local reviewers (the simulator, the demo)."""
    found: dict[str, str] = {}
    for match in _MARKER.finditer(text):
        found.setdefault(match.group(1), match.group(2))
    return {part: found.get(part, "") for part in PARTS}


#: the most characters (after :func:`_plain`) that may stand between a part's name and its
#: word in untrusted text for the two to read as a marker: quotes, a colon, braces, spaces
#: and line breaks, never a letter, digit or underscore (``head_key``, ``head(table)`` in
#: code are not markers; measured on 1.8 MB of this repository's diff: a 48-character
#: window of any characters met 16 of 300 random word draws, this rule 1, the example
#: ``"middle": "owl"`` of docs/verdict.md)
NEAR = 8
#: what ties a name to a value in a marker: one of them stands between the two
#: (``"head": "tree"``, ``head = tree``), not a bare space or comma (``head tree``)
_TIES = frozenset(":=\"'")


def _plain(text: str) -> str:
    """``text`` as a model reads it: compatibility forms folded (fullwidth, ligatures),
    invisible format characters (zero-width, bidi) gone, any case."""
    folded = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in folded if unicodedata.category(ch) != "Cf").casefold()


def forged_parts(text: str, words: Mapping[str, str]) -> list[str]:
    """The parts of :data:`PARTS` whose word of ``words`` follows the part's name in
    ``text`` (untrusted: the author wrote it) as a marker writes it: at most :data:`NEAR`
    characters between, no letter, digit or underscore, a colon, equals sign or quote
    among them (``"tail": "apple"``, ``TAIL = APPLE``). Linear: one bounded look per
    name."""
    plain = _plain(text)
    found = []
    for part in PARTS:
        word = re.escape(words[part])
        near = rf"(?<![a-z0-9_]){part}([^a-z0-9_]{{1,{NEAR}}}){word}(?![a-z0-9_])"
        if any(set(gap.group(1)) & _TIES for gap in re.finditer(near, plain)):
            found.append(part)
    return found


def check_read(read: Mapping[str, str], *, diff_sha: str, policy_version: str) -> None:
    """Raise :class:`~gate.errors.PromptUnread` unless ``read`` repeats the word of every
    part of the prompt bound to ``diff_sha`` and ``policy_version`` (letter case and
    surrounding spaces aside), naming each part whose word it does not repeat."""
    expected = words_for(diff_sha, policy_version)
    unseen = [part for part in PARTS if read.get(part, "").strip().casefold() != expected[part]]
    if not unseen:
        return
    said = ", ".join(f"{part} {_shown(read.get(part, ''))}" for part in unseen)
    raise PromptUnread(
        "the model did not repeat the read word of "
        + ", ".join(PART_NAMES[part] for part in unseen)
        + f" ({said}): the server did not give it the whole prompt, so its verdict is about "
        "part of the change; raise the server's context (Ollama num_ctx, llama.cpp "
        "--ctx-size, llama-cpp-python --n_ctx, vLLM --max-model-len) or lower "
        "max_chunk_bytes, and use a chat template that keeps the system message; not about "
        "the code"
    )


def _shown(word: str) -> str:
    text = redact(json.dumps(word))
    return text if len(text) <= 24 else text[:21] + "..."
