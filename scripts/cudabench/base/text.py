"""Text for people: aligned or Markdown tables, numbers with their units,
and text from elsewhere made visible (no control character reaches a terminal)."""
import re

# Characters that move the cursor, end a line or drive a terminal (C0, DEL,
# C1 with its CSI, Unicode's line and paragraph separators, the bidi
# overrides that reorder what is shown): never printed as they are.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(text, keep=""):
    """`text` with each control character shown as an escape (\\n, \\x1b,
    \\u2028), so that a label, a path, a benchmark name or a message from a
    file can neither end a line nor drive the terminal: one line stays one
    line and a fake row cannot be printed. keep: the characters left as
    they are (the newlines of a report the tool itself wrote). Every text a
    tool prints from its inputs goes through here (table(), md_cell(), the
    tools' standard output and their one-line errors: base/cli.py)."""
    return CONTROL.sub(lambda m: m.group() if m.group() in keep else ESCAPES.get(m.group()) or (
        f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"), str(text))


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def fmt_value(x, metric):
    if x != x:  # nan
        return "-"
    if metric == "time":
        for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
            if x >= scale:
                return f"{x / scale:.3g} {unit}"
        return f"{x / 1e-9:.3g} ns"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}/s"
    return f"{x:.3g}/s"


def speed_of(change):
    """The speed that a change (+ means slower: the new time over the
    baseline's, less 1) is: the baseline's time over the new one's, 0.93 for
    7.5% more time. Every comparison of two runs is shown as a speed. A new
    time of 0 (change -1) is an infinite speed; a negative one, none."""
    if change != change or change < -1:
        return float("nan")
    return float("inf") if change == -1 else 1 / (1 + change)


def fmt_speed(x):
    """0.93x; "-" for none. A speed far from 1 keeps two significant
    digits (0.0016x, not 0.00x). An infinite one (a time of 0) is no
    measurement: "-" too."""
    if x != x or x == float("inf"):
        return "-"
    return f"{x:.2f}x" if 0.1 <= x < 100 else f"{x:.2g}x" if x < 0.1 else f"{x:.0f}x"


# What Markdown or HTML could read in a table cell's or a heading's text: a
# link, an image, emphasis, code, a tag, an entity, a cell's end (an `_`
# inside a word, as in cuda_toolkit, is never emphasis: left as it is).
MARKUP = re.compile(r"[\\`*\[\]~|!<>&#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


class Markup(str):
    """Markdown a tool makes itself from its own words and numbers (a
    verdict in bold): md_cell passes it as it is. Never for text from
    elsewhere (a label, a path, a subject)."""


def md_cell(x):
    """Text (a subject, a label, a path) as one Markdown table cell or
    heading shows it, as text and nothing else: newlines become spaces, any
    other control character is shown (visible()), `<`, `>` and `&` become
    entities and every other character that Markdown reads (links, images,
    emphasis, code, a cell's `|`) is escaped. Every Markdown table of the
    scripts goes through here (table()), and every text the history page
    takes from a commit. Markup passes as it is (on one line)."""
    if isinstance(x, Markup):
        return " ".join(x.splitlines())
    return MARKUP.sub(lambda m: ENTITIES.get(m.group()) or "\\" + m.group(), visible(" ".join(str(x).splitlines())))


def table(headers, rows, markdown):
    """An aligned text table, or a Markdown one; every cell made visible() (or md_cell())."""
    if markdown:
        line = lambda r: "| " + " | ".join(md_cell(c) for c in r) + " |"
        return "\n".join([line(headers), "|" + "|".join("---" for _ in headers) + "|"] + [line(r) for r in rows])
    headers, rows = [visible(h) for h in headers], [[visible(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])
