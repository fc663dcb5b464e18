#!/usr/bin/env python3
"""Counts the tests that wait on the wall clock (issue 15's target: "tests that sleep on the wall
clock to test logic"). Usage: python3 Scripts/wall-clock-tests.py [--list]

The rule, applied to every `@Test` function under Tests/ (a parameterized test counts once):
a test counts when its body, or a helper it calls (any `func` of the same test target or of the
test-support targets, followed transitively by name), does one of
  1. sleep or read a real clock: `Task.sleep`, `.sleep(for:` / `.sleep(until:` (not on a
     `VirtualClock` the test made), `ContinuousClock`, `SuspendingClock`, `Date()`, `DispatchTime`;
  2. wait for a timer it set to a few (milli)seconds of real time: it assigns or passes a timer
     setting (connectTimeout, queueDelayOn/Off, incompleteTimeout, vanishTimeout, pingInterval,
     keepalive…, `timeout:`, `wait:`) a `.milliseconds(…)`/`.seconds(…)` value under 10 s and
     starts a runtime (connect, listen, a loopback room) with no VirtualClock.
Not counted: a bound that only fails a stuck test (the `within` timeout guards, the conformance
driver's deadline, `.timeLimit` traits): they race the test but never decide what it asserts.
A test that needs real sockets (UDP, SCTP, the impairment proxy, pion, child processes) is listed
with its target, so the count can be read as "logic tests" (ConduitCoreTests, ConduitTests,
ConduitLoopbackTests, ConduitReliableTransportTests, ConduitRelayTests minus RelayUDPTests,
ConduitToolingTests) and "socket tests" (the rest).
"""
import os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SUPPORT = ["Sources/ConduitNetworkTestSupport", "Sources/ConduitConformance"]
# Bounds only (they end a stuck test or a quiet read, and never decide what a test asserts):
# (function name, file name).
GUARDS = {("within", "TestSupport.swift"), ("within", "ConferenceTestSupport.swift"), ("within", "Support.swift"),
          ("wait", "LinkDriver.swift"), ("read", "ConformanceSuite+Links.swift")}
SLEEP = re.compile(r"Task\.sleep|\.sleep\((for|until):|ContinuousClock|SuspendingClock|\bDate\(\)|DispatchTime")
TIMER = re.compile(r"\b(connectTimeout|queueDelayOn|queueDelayOff|incompleteTimeout|vanishTimeout|pingInterval|keepalive\w*|holdTime|timeout|wait)\s*[:=]\s*\.(milliseconds|seconds)\((\d[\d_]*)\)")
RUNTIME = re.compile(r"\bconnect\(|\blisten\(|LoopbackRoom|CallPair|ConduitRuntime\(")
VIRTUAL = re.compile(r"VirtualClock|ARQEngineHarness|RoomHarness|CallHarness|SansIOPair")
FUNC = re.compile(r"\bfunc\s+([A-Za-z_][A-Za-z0-9_]*)\s*(<[^>{]*>)?\s*\(")
SOCKET_FILES = re.compile(r"UDPTests|NATSClientTests|ClusterSoakTests|ClusterFailureTests|RelayAbuseSoakTests")
# Helpers of a support type with generic names (start, stop): a call reaches them only from a
# body that names the type or its usual variable, so that every `proxy.start(` is not taken for
# starting nats-server.
SCOPED = {"NATSServerProcess.swift": re.compile(r"NATSServerProcess|\bnats\b")}
LOGIC_TARGETS = {"ConduitCoreTests", "ConduitTests", "ConduitLoopbackTests", "ConduitReliableTransportTests", "ConduitRelayTests", "ConduitToolingTests"}


def strip_comments(text):
    """The text without // and /* */ comments; string literals (URLs hold `//`) are kept."""
    out, index, in_string = [], 0, False
    while index < len(text):
        char = text[index]
        if in_string:
            out.append(char)
            if char == "\\":
                out.append(text[index + 1:index + 2])
                index += 2
                continue
            if char == '"' or char == "\n":
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("//", index):
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
            continue
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            index = len(text) if end < 0 else end + 2
            continue
        else:
            out.append(char)
        index += 1
    return "".join(out)


def body_at(text, start):
    """The brace-balanced body that begins at the first `{` after `start`."""
    open_at = text.find("{", start)
    if open_at < 0:
        return "", start
    depth = 0
    for index in range(open_at, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[open_at:index + 1], index
    return text[open_at:], len(text)


def functions(paths):
    """(name, body, is_test, file) of every func in `paths`."""
    found = []
    for path in paths:
        text = strip_comments(open(path, encoding="utf-8").read())
        for match in FUNC.finditer(text):
            prefix = text[max(0, match.start() - 400):match.start()]
            last_attr = prefix.rfind("@Test")
            between = prefix[last_attr:] if last_attr >= 0 else ""
            is_test = last_attr >= 0 and not re.search(r"\bfunc\b|\}\s*$", between.split("@Test", 1)[1] if "@Test" in between else "")
            body, _ = body_at(text, match.end())
            found.append((match.group(1), body, is_test, path))
    return found


def swift_files(directory):
    for base, _, names in os.walk(directory):
        for name in names:
            if name.endswith(".swift"):
                yield os.path.join(base, name)


def main():
    support = [f for d in SUPPORT for f in swift_files(os.path.join(ROOT, d))]
    support_funcs = functions(support)
    results = []
    tests_dir = os.path.join(ROOT, "Tests")
    for target in sorted(os.listdir(tests_dir)):
        target_dir = os.path.join(tests_dir, target)
        if not os.path.isdir(target_dir):
            continue
        funcs = functions(list(swift_files(target_dir))) + support_funcs
        # A helper is visible to the tests of its own file, or to the whole target when it lives
        # in a shared file (a *Support* or *Harness* file, or a support target).
        def shared(path):
            return not path.startswith(target_dir) or re.search(r"Support|Harness", os.path.basename(path))
        helpers = [(n, b, p) for n, b, t, p in funcs if not t and (n, os.path.basename(p)) not in GUARDS]
        waiting = {(n, p) for n, b, p in helpers if SLEEP.search(b)}
        def visible(called_from, helper_path, body=None):
            scope = SCOPED.get(os.path.basename(helper_path))
            if scope and body is not None and not scope.search(body):
                return False
            return shared(helper_path) or helper_path == called_from
        changed = True
        while changed:  # callers of a waiting helper wait too
            changed = False
            for name, body, path in helpers:
                if (name, path) not in waiting and any(visible(path, wp, body) and re.search(r"\b%s\(" % re.escape(w), body) for w, wp in waiting):
                    waiting.add((name, path))
                    changed = True
        for name, body, is_test, path in funcs:
            if not is_test or not path.startswith(target_dir):
                continue
            reasons = []
            # Sleeping on a VirtualClock of the test's own is virtual time, not the wall clock.
            for clock in re.findall(r"\blet\s+(\w+)\s*=\s*VirtualClock\(", body):
                body = re.sub(r"\b%s\.sleep\(" % clock, "virtualSleep(", body)
            # The clock of a virtual-time pair (`let (clock, …) = (pair.clock, …)`) is virtual too.
            if re.search(r"\bVirtualReliablePair\(", body):
                body = re.sub(r"\bclock\.sleep\(", "virtualSleep(", body)
            if SLEEP.search(body):
                reasons.append("sleeps")
            called = sorted({w for w, wp in waiting if visible(path, wp, body) and re.search(r"\b%s\(" % re.escape(w), body)})
            if called:
                reasons.append("calls " + ", ".join(called))
            short = [m for m in TIMER.finditer(body) if (int(m.group(3).replace("_", "")) * (1 if m.group(2) == "seconds" else 0.001)) < 10]
            if short and RUNTIME.search(body) and not VIRTUAL.search(body):
                reasons.append("real-time timer " + short[0].group(0))
            if reasons:
                kind = "logic" if target in LOGIC_TARGETS and not SOCKET_FILES.search(path) else "socket"
                results.append((kind, os.path.relpath(path, ROOT), name, "; ".join(reasons)))
    if "--list" in sys.argv:
        for kind, path, name, why in results:
            print(f"{kind:6} {path}:{name}  ({why})")
    logic = sum(1 for r in results if r[0] == "logic")
    print(f"wall-clock tests: {len(results)} (logic {logic}, real sockets {len(results) - logic})")


if __name__ == "__main__":
    main()
