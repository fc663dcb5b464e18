#!/usr/bin/env python3
"""Prints a Swift Testing --filter pattern for the tests that failed in a JUnit XML report
(--xunit-output), one alternative per test as "Suite/function", or nothing when no test case
failed (a failure outside any test, or no report): the caller then runs the whole pass again.

    python3 Scripts/failed-tests.py REPORT.xml

Scripts/test.sh and Scripts/sanitizers.sh run a failed test once more, alone: a failure on a loaded
2-core machine may be a wall-clock deadline the machine overran, and alone the test shows whether it
fails for itself (rerunning the whole pass took 150 s under ThreadSanitizer and loaded the machine
just as much).
"""
import re
import sys
import xml.etree.ElementTree as ElementTree


def failed(report):
    try:
        root = ElementTree.parse(report).getroot()
    except (OSError, ElementTree.ParseError):
        return []
    names = []
    for case in root.iter("testcase"):
        if case.find("failure") is None and case.find("error") is None:
            continue
        suite = case.get("classname", "").split(".")[-1]
        name = case.get("name", "")
        if not suite or not name:
            return []  # a failure we cannot name: the whole pass runs again
        names.append(re.escape(f"{suite}/{name}"))
    return sorted(set(names))


if __name__ == "__main__":
    print("|".join(failed(sys.argv[1])))
