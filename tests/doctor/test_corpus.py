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
        assert not re.search(r"/home/(?!user\b)[\w.-]+/|\\Users\\(?!user\b|appdata\b)", c["paste"], re.I), c["id"]
    assert sum(c["class"] == "decoy" for c in all_cases) >= 5


def test_the_split_is_the_hash_rule_and_covers_every_case():
    s = split()
    ids = {c["id"] for c in cases()}
    assert set(s["held_out"]) | set(s["rules_from"]) == ids and not set(s["held_out"]) & set(s["rules_from"])
    assert s["held_out"] == sorted(i for i in ids if held_out(i))
    assert len(s["held_out"]) >= 0.4 * len(ids)


# ---------------------------------------------------------------- the score

def grade(case, answer):
    """'right': the established cause first and a fix that would work;
    'half': the right cause with a fix that would not; else 'wrong'."""
    if not answer or not answer["causes"]:
        return "wrong"
    first = answer["causes"][0]
    said = " ".join([first["title"]] + first["in_the_message"]).lower()
    fix = first["fix"].lower()
    def hits(groups, text):
        return all(any(w in text for w in group) for group in groups)
    if not hits(case["cause_words"], said):
        return "wrong"
    return "right" if hits(case["fix_words"], fix) else "half"


def score(graded):
    return sum(1.0 if g == "right" else 0.5 if g == "half" else 0.0 for g in graded) / len(graded)


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """Every case answered by bench --explain - --explain-json on a machine
    without a driver: an NVIDIA GPU on PCI, no libcuda, no module."""
    tmp = tmp_path_factory.mktemp("corpus")
    m = Machine(tmp)
    m.libcuda_dir = m.nvml_dir = str(tmp / "empty")
    m.remove("sys/module/nvidia")
    m.remove("proc/driver/nvidia/version")
    m.env.update(HOME=str(tmp / "home"), CUDABENCH_CACHE=str(tmp / "cache"))
    out = {}
    for c in cases():
        r = m.run("--explain", "-", "--explain-json", stdin=c["paste"])
        assert r.returncode in (0, 2) and (r.returncode == 0 or "not a CUDA set-up error I know" in r.stderr), c["id"]
        assert "Traceback" not in r.stderr
        out[c["id"]] = json.loads(r.stdout) if r.returncode == 0 else None
    return out


def report(name, chosen, answers, capsys):
    """The score, printed past pytest's capture: CTest's log shows it."""
    graded = [grade(c, answers[c["id"]]) for c in chosen]
    line = "%s: %.1f%% (%d right, %d half, %d wrong of %d)" % (
        name, 100 * score(graded), graded.count("right"), graded.count("half"), graded.count("wrong"), len(graded))
    with capsys.disabled():
        print("\n" + line)
    return line, score(graded)


def test_the_score_on_the_held_out_half_is_stated_in_the_docs_and_at_least_85_percent(answers, capsys):
    held = set(split()["held_out"])
    report("rules written from", [c for c in cases() if c["id"] not in held], answers, capsys)
    line, s = report("held out", [c for c in cases() if c["id"] in held], answers, capsys)
    with open(os.path.join(HERE, "..", "..", "docs", "doctor.md"), encoding="utf-8") as f:
        assert "Held out: " + line.split(": ", 1)[1] in f.read(), "docs/doctor.md must state: " + line
    assert s >= 0.85, line


# The issue's classes of misses, each by the words its pastes carry: the
# container toolkit; wordings it did not know (one entry each); JAX's
# version skew; the right class with the wrong fix; and what is not the
# set-up. (A paste from another machine answered with this one is every
# case's test, below.)
CLASSES = {
    "container toolkit": r"nvidia-container-cli|could not select device driver|failed to add device rules",
    "the kernel log's API mismatch": r"api mismatch",
    "ONNX Runtime's Require cuDNN and CUDA": r"require cudnn",
    "ONNX Runtime's CUDA provider": r"cudaexecutionprovider|onnxruntime_providers_cuda",
    "Numba's driver": r"driver missing function|numbapro_cuda_driver|numba_cuda_driver",
    "operation not supported": r"operation not supported",
    "nvJitLink shadowed": r"__nvjitlink",
    "TensorFlow's could not find cuda drivers": r"could not find cuda drivers",
    "NVRTC or nvcc too old for the GPU": r"invalid value for --gpu-architecture|unsupported gpu architecture",
    "JAX version skew": r"pjrt|jax_cuda12_plugin version|incompatible with jax version|jaxlib is version",
    "right class, wrong fix (a mismatch a reboot may not cure, WSL's warning, NVRTC)":
        r"version mismatch|is not a symbolic link|invalid value for --gpu-architecture",
    "WSL's harmless ldconfig warning": r"is not a symbolic link",
    "TF-TRT's harmless warning": r"tf-trt|could not find tensorrt",
    "not a set-up cause": r"out of memory|out of bounds|illegal memory access|tf-trt|same device",
}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_each_class_of_the_issue_has_three_cases_answered_right(name, answers):
    chosen = [c for c in cases() if re.search(CLASSES[name], c["paste"], re.I)]
    right = [c["id"] for c in chosen if grade(c, answers[c["id"]]) == "right"]
    print("%s: %d of %d right" % (name, len(right), len(chosen)))
    assert len(right) >= 3, (name, right)


def test_a_paste_from_another_machine_is_never_answered_with_this_one(answers):
    """The machine has no driver: no answer may offer that as a paste's cause."""
    for case_id, a in answers.items():
        if a:
            assert not a["here"] and not a["cause_found"], case_id
