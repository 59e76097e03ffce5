#!/usr/bin/env python3
"""Score a run on a project with seeded defects (examples/seeded-shop).

Reads the run's convergence ledger and the project's expected-findings.json,
matches each claim to the seeded defects by its anchors (same file,
overlapping lines; a moved anchor at the lines okstra found its excerpt on),
and prints, per defect, which workers found it and its convergence class;
then the totals convergence is measured by:

- found: seeded defects some claim matches (recall over the union);
- confirmed: of those, matched by a full- or partial-consensus claim;
- found by one model: matched only by one worker's claims (the ones a
  ">= 2 agree" filter would throw away);
- the false leads: raised or not, and their class (refuted = contested or
  unverifiable, never consensus);
- claims that match nothing seeded, by class (false positives, or real
  defects nobody seeded: read them).

Usage: python3 benches/seeded_score.py <run-dir> [expected-findings.json]
"""

import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANCHOR = re.compile(r"^(\S+?):(\d+)(?:-(\d+))?")
CONFIRMED = ("full-consensus", "partial-consensus")


def norm(path):
    parts = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            parts = parts[:-1]
        else:
            parts.append(part)
    return "/".join(parts)


def expected_spans(entry):
    spans = []
    for anchor in entry["anchors"]:
        match = ANCHOR.match(anchor)
        start = int(match.group(2))
        spans.append((norm(match.group(1)), start, int(match.group(3) or start)))
    return spans


def claim_spans(item):
    spans = []
    for anchor in item.get("anchors", []):
        lines = {"verified": anchor["lines"], "moved": anchor.get("foundAt")}.get(anchor["status"])
        if not lines:
            continue
        first, _, last = lines.partition("-")
        spans.append((norm(anchor["path"]), int(first), int(last or first)))
    return spans


def overlaps(a, b):
    return any(p == q and s1 <= e2 and s2 <= e1 for p, s1, e1 in a for q, s2, e2 in b)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    run_dir = sys.argv[1]
    expected_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        REPO, "examples/seeded-shop/expected-findings.json")
    expected = json.load(open(expected_path))
    ledger = json.load(open(os.path.join(run_dir, "state", "convergence-ledger.json")))
    items = ledger["items"]
    matched_ids = set()

    def report(entry):
        spans = expected_spans(entry)
        hits = [i for i in items if overlaps(claim_spans(i), spans)]
        matched_ids.update(i["itemId"] for i in hits)
        owners = sorted({i["owner"] for i in hits})
        classes = sorted({i.get("finalClass") or "unclassified" for i in hits})
        return hits, owners, classes

    print(f"run {run_dir}: {len(items)} claims in the ledger, {ledger.get('roundsRun', 0)} rounds")
    found = confirmed = single = 0
    for defect in expected["defects"]:
        hits, owners, classes = report(defect)
        found += bool(hits)
        confirmed += any(i.get("finalClass") in CONFIRMED for i in hits)
        single += len(owners) == 1
        state = "missed" if not hits else ", ".join(classes)
        print(f"  {defect['id']} ({defect['difficulty']}) {defect['title']}: {state}"
              + (f"; found by {', '.join(owners)}" if owners else ""))
    for lead in expected.get("falseLeads", []):
        hits, owners, classes = report(lead)
        verdict = ("not raised" if not hits else
                   "REACHED CONSENSUS" if set(classes) & set(CONFIRMED) else "refuted")
        print(f"  {lead['id']} (false lead) {lead['title']}: {verdict}"
              + (f" ({', '.join(classes)}; raised by {', '.join(owners)})" if hits else ""))
    total = len(expected["defects"])
    print(f"found {found}/{total}, confirmed {confirmed}/{total}, found by one model only {single}")
    unmatched = {}
    for item in items:
        if item["itemId"] not in matched_ids:
            cls = item.get("finalClass") or "unclassified"
            unmatched[cls] = unmatched.get(cls, 0) + 1
    print(f"claims matching no seeded defect, by class: {unmatched or 'none'}")


if __name__ == "__main__":
    main()
