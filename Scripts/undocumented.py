#!/usr/bin/env python3
"""Counts the public declarations without a documentation comment, per product module.

    python3 Scripts/undocumented.py SYMBOL_GRAPH_DIR [--list]

Reads the symbol graphs that Scripts/extract-symbol-graphs.py extracted for Scripts/docs.sh (or
swift-docc-plugin for `generate-documentation`, or `swift package dump-symbol-graph`) wrote, in any folders below the
one given: `MODULE.symbols.json` and, for extensions of other modules' types,
`MODULE@OTHER.symbols.json`. A symbol counts when it is public or open, is declared in one of the
product modules below (its source file is under Sources/MODULE/), and is neither synthesized
(`::SYNTHESIZED::` in its identifier: default implementations, memberwise conformances) nor
documented through inheritance (a protocol requirement's comment, which the graph copies onto the
implementation). Prints one line per module and the total; exits 1 when any is undocumented.
"""
import json
import os
import sys
from urllib.parse import unquote, urlparse

PRODUCT_MODULES = [
    "Conduit", "ConduitCore", "ConduitLoopback", "ConduitReliableTransport", "ConduitUDP",
    "ConduitSRTP", "ConduitSCTP", "ConduitKernelSCTP", "ConduitRelay", "ConduitConformance",
    "ConduitDriver", "ConduitTesting", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment",
]


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    directory, listing = sys.argv[1], "--list" in sys.argv[2:]
    seen = set()
    undocumented = {module: [] for module in PRODUCT_MODULES}
    total = {module: 0 for module in PRODUCT_MODULES}
    for root, _, files in os.walk(directory):
        for name in sorted(files):
            if not name.endswith(".symbols.json"):
                continue
            module = name[: -len(".symbols.json")].split("@")[0]
            if module not in undocumented:
                continue
            with open(os.path.join(root, name)) as handle:
                graph = json.load(handle)
            for symbol in graph.get("symbols", []):
                identifier = symbol["identifier"]["precise"]
                if "::SYNTHESIZED::" in identifier or symbol.get("accessLevel") not in ("public", "open"):
                    continue
                if symbol["kind"]["identifier"] == "swift.extension":
                    continue  # an extension block (DocC's graphs have them): its members count, not it
                location = symbol.get("location")
                if location is None:
                    continue  # no source location: compiler-generated
                path = unquote(urlparse(location["uri"]).path)
                if f"/Sources/{module}/" not in path:
                    continue
                key = (module, identifier)
                if key in seen:
                    continue
                seen.add(key)
                total[module] += 1
                if symbol.get("docComment") is None:
                    line = location["position"]["line"] + 1
                    title = ".".join(symbol.get("pathComponents", [])) or symbol["names"]["title"]
                    where = path.split("/Sources/", 1)[1]
                    undocumented[module].append(f"Sources/{where}:{line}: {symbol['kind']['displayName'].lower()} {title}")
    missing = 0
    print("undocumented public declarations (of all public declarations), per module:")
    for module in PRODUCT_MODULES:
        count = len(undocumented[module])
        missing += count
        print(f"  {module:<20} {count:>4} of {total[module]}")
        if listing:
            for entry in sorted(undocumented[module]):
                print(f"    {entry}")
    print(f"  {'total':<20} {missing:>4} of {sum(total.values())}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
