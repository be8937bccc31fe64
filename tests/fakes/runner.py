"""The GitHub Actions runner's reading of a step's log: which lines are workflow commands.

Ported from the runner's ``ActionCommand.TryParseV2`` (a command is a line that starts with
``::`` after ``TrimStart``; the command info runs to the next ``::``; properties split on
``,`` then on the first ``=``; values unescaped in the runner's order) over lines split as
.NET's ``StreamReader.ReadLine`` splits them (CR, LF, CRLF). Used as the oracle for what a
log the gate writes makes the runner do.
"""

from __future__ import annotations

DATA_ESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
PROPERTY_ESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))

Command = tuple[str, dict[str, str], str]


def _unescape(text: str, table: tuple[tuple[str, str], ...]) -> str:
    for escaped, raw in table:
        text = text.replace(escaped, raw)
    return text


def runner_lines(log: str) -> list[str]:
    """Lines as .NET's ``StreamReader.ReadLine`` yields them."""
    return log.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def parse_command(line: str) -> Command | None:
    """``ActionCommand.TryParseV2`` for any command name: (name, properties, data)."""
    message = line.lstrip()
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    if end < 0:
        return None
    info = message[2:end]
    space = info.find(" ")
    name = info if space < 0 else info[:space]
    props: dict[str, str] = {}
    if space > 0:
        for item in (p for p in info[space + 1 :].strip().split(",") if p):
            pair = [x for x in item.split("=", 1) if x]
            if len(pair) == 2:
                props[pair[0]] = _unescape(pair[1], PROPERTY_ESCAPES)
    return name, props, _unescape(message[end + 2 :], DATA_ESCAPES)


def commands_in(log: str) -> list[Command]:
    """Every workflow command the runner would read in ``log``, in order."""
    return [c for c in map(parse_command, runner_lines(log)) if c is not None]
