"""Text for people: aligned or Markdown tables, numbers with their units."""
import re


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


def md_cell(x):
    """One Markdown table cell's text: a `|` would start a new column and a
    newline end the row, so `|` is escaped and newlines become spaces. Every
    Markdown table of the scripts goes through here (table())."""
    return " ".join(str(x).splitlines()).replace("|", "\\|")


def table(headers, rows, markdown):
    if markdown:
        line = lambda r: "| " + " | ".join(md_cell(c) for c in r) + " |"
        return "\n".join([line(headers), "|" + "|".join("---" for _ in headers) + "|"] + [line(r) for r in rows])
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])
