#!/usr/bin/env python3
"""Writes seed corpora for every fuzz target into fuzz/corpus/<target>/ from the repository's own inputs:
the AdmissionReviews of tests/fixtures and examples/requests, the objects they carry, the quantities and
regexps in them, and a few hand-picked inputs. Safe to run again (files are named by their content)."""

import hashlib
import json
import pathlib

FUZZ = pathlib.Path(__file__).resolve().parent
ROOT = FUZZ.parent
CORPUS = FUZZ / "corpus"


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    out = CORPUS / target
    out.mkdir(parents=True, exist_ok=True)
    (out / hashlib.sha1(data).hexdigest()).write_bytes(data)


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def cases():
    lines = (FUZZ / "cases.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def case_review(name):
    if name.startswith("examples/"):
        return ROOT / "examples/requests" / (name.removeprefix("examples/") + ".json")
    return ROOT / "tests/fixtures" / name / "review.json"


def objects(review):
    """The objects of a review in the order the review_object target numbers them."""
    req = review.get("request") or {}
    return [req[f] for f in ("object", "oldObject") if req.get(f) is not None]


def walk(value, visit):
    visit(value)
    if isinstance(value, dict):
        for v in value.values():
            walk(v, visit)
    elif isinstance(value, list):
        for v in value:
            walk(v, visit)


def main():
    names = cases()
    assert len(names) < 256, "the first input byte picks a case"
    by_dir = {}
    for i, name in enumerate(names):
        by_dir.setdefault(name.split("/")[0], i)

    reviews = sorted(ROOT.glob("tests/fixtures/*/*/review.json")) + sorted(ROOT.glob("examples/requests/*.json"))
    quantities, regexps = set(), set()
    for path in reviews:
        text = path.read_bytes()
        write("admission_review", text)
        webhook = "examples" if path.parent.name == "requests" else path.parent.parent.name
        index = by_dir.get(webhook, 0)
        write("review_chain", bytes([index]) + text)
        try:
            review = json.loads(text)
        except ValueError:
            continue
        for j, obj in enumerate(objects(review)):
            write("review_object", bytes([index, j]) + compact(obj).encode())
            if isinstance(obj, dict) and obj.get("kind") == "Pod":
                write("raw_pod", compact(obj))

        def visit(v):
            if isinstance(v, dict):
                for key in ("limits", "requests"):
                    if isinstance(v.get(key), dict):
                        quantities.update(str(q) for q in v[key].values())
                if isinstance(v.get("targetContainersNameRegex"), str):
                    regexps.add(v["targetContainersNameRegex"])

        walk(review, visit)

    for i, name in enumerate(names):
        text = case_review(name).read_bytes()
        write("review_chain", bytes([i]) + text)
        for j, obj in enumerate(objects(json.loads(text))):
            write("review_object", bytes([i, j]) + compact(obj).encode())

    deep_and_huge(names)

    for q in sorted(quantities) + ["100m", "1Gi", "1.5e3", "-0.1Ki", "9223372036854775807", "1E", ".5",
                                   "+1e-3", "0.000000001", "12345678901234567890Ei", "\"250Mi\"", "2.5"]:
        write("quantity", q)
    for r in sorted(regexps) + ["^main$", "app-.*", "[a-z]+(?i:X)\\d{2,3}", "\\pL{3}|\\p{Greek}", "(?m)^a$",
                                "[[:alpha:]]+\\b", "a{1000}", "(((a)))", "[^\\x00-\\x{10FFFF}]", "\\Qa.b\\E"]:
        write("go_regexp", r.encode() + b"\xffmain-container")
    for doc, patch in [
        ('{"b":{"z":1,"a":2},"c":1}', '{"c":2}'),
        ('{"r":1.50,"x":1e2}', '{"y":1}'),
        ('{"a":1}', '{"a":{"x":null,"y":2}}'),
        ('{"a":{"x":1}}', '{"a":[1,{"k":null}]}'),
        ('[1,2]', '{"b":null,"a":1}'),
        ('{"a":"<&>\\u2028"}', '{"b":"\\ud83d\\ude00"}'),
    ]:
        write("merge_patch", doc.encode() + b"\xff" + patch.encode())


def deep_and_huge(names):
    """Seeds at the extremes, for mutations to start from: nesting at and past Go's 10,000 levels, long
    strings and lists (within run-all.sh's -max_len of 256 KiB)."""
    deep = "[" * 10_001 + "]" * 10_001
    deep_objects = '{"a":' * 10_000 + "1" + "}" * 10_000
    long = "x" * 200_000
    pod = json.loads((ROOT / "examples/requests/create-web-pod.json").read_text())["request"]["object"]
    index = names.index("examples/create-web-pod")
    for where, value in [("label", deep), ("annotation", deep_objects), ("label", f'"{long}"'),
                         ("containers", "[" + ",".join(f'{{"name":"c{i}","image":"i"}}' for i in range(5000)) + "]")]:
        marked = json.loads(json.dumps(pod))
        if where == "containers":
            marked["spec"]["containers"] = "@@"
        else:
            marked["metadata"][where + "s"]["deep"] = "@@"
        text = compact(marked).replace('"@@"', value, 1)
        write("raw_pod", text)
        write("review_object", bytes([index, 0]) + text.encode())
        review = json.loads((ROOT / "examples/requests/create-web-pod.json").read_text())
        review["request"]["object"] = "@@"
        body = compact(review).replace('"@@"', text, 1)
        write("admission_review", body)
        write("review_chain", bytes([index]) + body.encode())
    write("merge_patch", deep.encode() + b"\xff{}")
    write("merge_patch", b'{"a":1}\xff' + deep_objects.encode())
    write("merge_patch", ('{"a":"%s"}' % long).encode() + b'\xff{"b":null}')
    write("go_regexp", ("(" * 1000 + "a" + ")" * 1000).encode() + b"\xffa")
    write("go_regexp", ("(?:a{2,3}" * 500 + ")" * 500).encode() + b"\xffaaa")
    write("quantity", "1" * 40 + "Ki")
    write("quantity", "0." + "0" * 100 + "1")


if __name__ == "__main__":
    main()
