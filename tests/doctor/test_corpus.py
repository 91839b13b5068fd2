"""`bench --explain` measured on real pasted errors it was not built from.

corpus/pastes.jsonl holds errors users pasted in public issue threads (the
machine output, user names in paths replaced), each with its thread, the
cause the thread established and what a right answer says (cause_words:
the first cause; fix_words: its fix; each a list of groups of
alternatives, every group must appear). corpus/split.json splits it, by a
hash of each id, before any rule was written for it: the rules come from
'rules_from', and the score that counts is the one on 'held_out'. The
digest below makes any change to either file visible: a case moved or
edited is a new corpus, with its own commit.

Each paste is answered on a machine without a driver (a GPU on PCI, no
libcuda, no module): the paste's cause must come from the paste, never
from this machine."""
import hashlib
import json
import os
import re

import pytest

from fake_machine import Machine

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
DIGEST = "fe99d15999165ad78039bbd36814f4826c1e67e7125ac1428cf06b691109108a"
KEYS = {"id", "class", "source", "paste", "cause", "established_by", "cause_words", "fix_words"}


def cases():
    with open(os.path.join(CORPUS, "pastes.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def split():
    with open(os.path.join(CORPUS, "split.json"), encoding="utf-8") as f:
        return json.load(f)


def held_out(case_id):
    return int(hashlib.sha256(("cudabench-corpus:" + case_id).encode()).hexdigest(), 16) % 2 == 1


def test_the_corpus_and_its_split_are_the_committed_ones():
    h = hashlib.sha256()
    for name in ("pastes.jsonl", "split.json"):
        with open(os.path.join(CORPUS, name), "rb") as f:
            h.update(f.read())
    assert h.hexdigest() == DIGEST, "the corpus or its split changed: a new corpus needs its own commit and digest"


def test_every_case_is_a_real_paste_with_its_source_and_answer():
    all_cases = cases()
    assert len(all_cases) >= 100
    assert len({c["id"] for c in all_cases}) == len(all_cases)
    assert len({c["source"] for c in all_cases}) == len(all_cases), "one case a thread"
    for c in all_cases:
        assert set(c) == KEYS, c["id"]
        assert re.match(r"https://", c["source"]), c["id"]
        assert c["paste"].strip() and c["cause"].strip() and c["cause_words"] and c["fix_words"], c["id"]
        assert not re.search(r"/home/(?!user\b)[\w.-]+/|\\Users\\(?!user\b)", c["paste"], re.I), c["id"]
    assert sum(c["class"] == "decoy" for c in all_cases) >= 5


def test_the_split_is_the_hash_rule_and_covers_every_case():
    s = split()
    ids = {c["id"] for c in cases()}
    assert set(s["held_out"]) | set(s["rules_from"]) == ids and not set(s["held_out"]) & set(s["rules_from"])
    assert s["held_out"] == sorted(i for i in ids if held_out(i))
    assert len(s["held_out"]) >= 0.4 * len(ids)
