#!/usr/bin/python3
"""Compare two test runs case by case: CPython regrtest --junit-xml reports (tests/compat/cpython.sh)
or directories of GTest TAP outputs, one NAME.tap per test program (tests/compat/glib.sh).

junit-compare.py MODULES REFERENCE.xml SUBJECT.xml [RERUN-REFERENCE.xml RERUN-SUBJECT.xml]

MODULES is a comma-separated list of the regrtest module names that were run (test_socket,
test_asyncio.test_events, ...). REFERENCE is the bwrap run, SUBJECT the cordon run; each of the
four may be a comma-separated list of reports (regrtest runs whose cases are merged). A missing
or unreadable report counts as a run in which no case ran. A directory stands for the TAP files in
it: the case "ok 3 /socket/ipv4_sync" of socket.tap is test.socket./socket/ipv4_sync, MODULES then
names the programs; a program that stopped early (a GLib assertion aborts it) leaves the rest of
its cases absent, and their detail says why (its "Bail out!" line).

Each case has one outcome: pass, fail (a failure or an error), skip, or absent (not in the
report: the module crashed, timed out or was not collected). A *regression* is a case that passed
in the reference run and did not pass in the subject run (it failed, erred, was skipped or is
absent). With the rerun reports (the regressions run again, alone, on both sides), a regression
stands only if it passed in the reference rerun and did not pass in the subject rerun; one that
passed in the subject rerun or failed in the reference rerun is reported as flaky instead.

Output, one record per line, fields separated by tabs:
  module  NAME  CASES  REF-PASSED  SUBJ-PASSED  REF-FAILED  SUBJ-FAILED
  regression  NAME  CASE  SUBJECT-OUTCOME  DETAIL
  flaky  NAME  CASE  OUTCOMES  DETAIL
  both-failed  NAME  CASE  DETAIL
  subject-only-passed  NAME  CASE  REFERENCE-OUTCOME
The regression ids alone (for regrtest --matchfile) go to the file named by $COMPAT_RERUN_LIST
when that is set and there is no rerun yet.
"""

import os
import re
import sys
import xml.etree.ElementTree as ET


def load(paths):
    """case id -> (outcome, detail), from the reports in the comma-separated paths"""
    cases = {}
    for path in paths.split(","):
        if os.path.isdir(path):
            load_tap_dir(cases, path)
            continue
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError):
            continue
        load_into(cases, root)
    return cases


def load_into(cases, root):
    for tc in root.iter("testcase"):
        name = tc.get("name") or ""
        outcome, detail = "pass", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                outcome = "fail"
                text = (child.text or "").strip() or child.get("message") or ""
                detail = child.tag + ": " + exception_line(text, child.get("type", ""))
                break
            if child.tag == "skipped":
                outcome = "skip"
                detail = "skipped: " + (child.get("message") or (child.text or "").strip())
        cases[name] = (outcome, detail[:300].replace("\t", " "))
    return cases


TAP = re.compile(r"^(ok|not ok) \d+ (\S+)(.*)$")


def load_tap_dir(cases, path):
    for f in sorted(os.listdir(path)):
        if not f.endswith(".tap"):
            continue
        prog = f[: -len(".tap")]
        errors = []
        try:
            lines = open(os.path.join(path, f), errors="replace").read().splitlines()
        except OSError:
            continue
        for line in lines:
            if "ERROR" in line or line.startswith("Bail out!"):
                errors.append(line.strip())
            m = TAP.match(line)
            if not m:
                continue
            name = "test.%s.%s" % (prog, m.group(2))
            if m.group(1) == "ok" and "# SKIP" in m.group(3):
                cases[name] = ("skip", "skipped:" + m.group(3).split("# SKIP", 1)[1][:300])
            elif m.group(1) == "ok":
                cases[name] = ("pass", "")
            else:
                cases[name] = ("fail", "failure: " + (errors[-1] if errors else line)[:300])
            errors = []
        if errors:
            # the program stopped after its last case: say so in place of the absent ones
            cases["stopped." + prog] = ("stopped", errors[-1][:300])


EXC = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure)\b")


def exception_line(text, fallback):
    """The last exception line of a traceback (a test that runs a child and shows its output
    ends with the child's summary, not with the exception)."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in reversed(lines):
        if EXC.match(l):
            return l
    return lines[-1] if lines else fallback


def module_of(case, modules):
    best = ""
    for m in modules:
        if case.startswith("test." + m + ".") and len(m) > len(best):
            best = m
    return best


def main(argv):
    if len(argv) not in (4, 6):
        print(__doc__, file=sys.stderr)
        return 2
    modules = [m for m in argv[1].split(",") if m]
    ref, subj = load(argv[2]), load(argv[3])
    rerun = len(argv) == 6
    if rerun:
        ref2, subj2 = load(argv[4]), load(argv[5])
    out = []
    regress_ids = []
    for m in modules:
        ids = sorted(c for c in set(ref) | set(subj) if module_of(c, modules) == m)
        def get(d, c):
            if c in d:
                return d[c]
            why = d.get("stopped." + m, (None, ""))[1]
            return ("absent", "absent from the report" + (" (the program stopped: %s)" % why
                                                          if why else ""))
        rp = sum(1 for c in ids if get(ref, c)[0] == "pass")
        sp = sum(1 for c in ids if get(subj, c)[0] == "pass")
        rf = sum(1 for c in ids if get(ref, c)[0] == "fail")
        sf = sum(1 for c in ids if get(subj, c)[0] == "fail")
        out.append(["module", m, len(ids), rp, sp, rf, sf])
        for c in ids:
            (ro, rd), (so, sd) = get(ref, c), get(subj, c)
            if ro == "pass" and so != "pass":
                if rerun:
                    (ro2, _), (so2, sd2) = get(ref2, c), get(subj2, c)
                    if ro2 == "pass" and so2 != "pass":
                        out.append(["regression", m, c, so2, sd2 or sd])
                    else:
                        out.append(["flaky", m, c,
                                    "bwrap %s/%s, cordon %s/%s" % (ro, ro2, so, so2), sd])
                else:
                    out.append(["regression", m, c, so, sd])
                    regress_ids.append(c)
            elif ro == "fail" and so == "fail":
                out.append(["both-failed", m, c, rd])
            elif so == "pass" and ro != "pass":
                out.append(["subject-only-passed", m, c, ro])
    for rec in out:
        print("\t".join(str(f) for f in rec))
    lst = os.environ.get("COMPAT_RERUN_LIST")
    if lst and not rerun:
        with open(lst, "w") as f:
            for c in regress_ids:
                f.write(c + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
