"""The numeric settings taken from the environment (CUDABENCH_PROBE_SECONDS,
...): one table, common/settings.json, which bench and train read too
(common/settings.h), and one grammar: digits, with a fraction where the
setting is not whole; no sign, space or exponent; within [min, max]. Empty
is unset (the default). A bad value is refused (BadInput: exit 2, one line
naming it), never replaced by the default.

  python3 -m cudabench.base.settings NAME   prints NAME's value (lib.sh's `setting`)
  python3 -m cudabench.base.settings        checks them all (lib.sh's script_start)
Either says why on stdout and exits 2 for a bad value."""
import json
import os
import re
import sys

from .errors import BadInput
from .paths import ROOT
from .text import visible

with open(os.path.join(ROOT, "common", "settings.json")) as _f:
    TABLE = json.load(_f)


def parse(name, raw):
    """The value `raw` gives setting `name` (its default when None or empty)."""
    s = TABLE[name]
    if not raw:
        return s["default"]
    grammar = r"[0-9]+" if s["whole"] else r"[0-9]+(\.[0-9]*)?"
    digits = len(raw.replace(".", ""))  # at most 15 in all, as common/settings.h reads them
    v = float(raw) if re.fullmatch(grammar, raw) and digits <= 15 else None
    if v is None or not s["min"] <= v <= s["max"]:
        raise BadInput(f"{name}={visible(raw)}: expected {s['expected']}, {s['min']:g} to {s['max']:g}")
    return int(v) if s["whole"] else v


def setting(name, environ=None):
    return parse(name, (os.environ if environ is None else environ).get(name))


def check_all(environ=None):
    for name in TABLE:
        setting(name, environ)


def main(argv):
    try:
        if argv:  # whole, or in plain digits (never 1e-05, which bash cannot read)
            v = setting(argv[0])
            print(v if isinstance(v, int) else format(v, "f"))
        else:
            check_all()
    except BadInput as e:
        print(e)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
