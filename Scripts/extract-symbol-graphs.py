#!/usr/bin/env python3
"""Extracts the symbol graphs of modules the debug build already compiled, as swift-docc-plugin does.

    python3 Scripts/extract-symbol-graphs.py OUTPUT_DIR MODULE...

Runs swift-symbolgraph-extract (from the toolchain that compiled the modules) on each MODULE's
.swiftmodule in .build/debug, with the search paths and C module maps of that module's own compile
command in SwiftPM's build manifest (.build/debug.yaml), and the options SwiftPM gives the plugin:
public symbols and up, synthesized members, extension blocks, no SPI (inherited docs kept, as the
plugin's graphs have them: Scripts/undocumented.py relies on it). Writes
OUTPUT_DIR/MODULE/MODULE.symbols.json (and MODULE@OTHER for extensions of other modules' types),
and into each MODULE folder the package's snippets (Snippets/**/*.swift) as the plugin's
snippet-extract writes them (conduit-snippets.symbols.json), which the catalogs' @Snippet
directives name. Unlike the plugin, it builds nothing: the plugin's build compiled the product
modules a second time. Exits 1 when a module is not in the manifest or its graph has no symbol.

First it refuses (exit 1) a manifest that is not the every-trait build's (each MODULE compiled
with every trait, its .swiftmodule there): extracted from another build, ConduitSCTP, ConduitSRTP
and ConduitKernelSCTP would be documented empty. Whether that build is current is not checked:
Scripts/docs.sh builds first unless told the test build just ran (--skip-build).
"""
import json
import os
import re
import subprocess
import sys

TRAITS = ("-DSCTP", "-DSRTP", "-DKernelSCTP", "-DNATS", "-DZlib")
# Options whose value is the next argument, kept for the extractor (the value is never an option).
KEPT_WITH_VALUE = ("-I", "-target", "-module-cache-path", "-swift-version", "-Xcc")
# The plugin's snippet markers (SnippetParser.swift): `// snippet.hide`, `// snippet.show`, and
# slice markers (`// snippet.NAME`, `// snippet.end`), in any case, with or without a space.
MARKER = re.compile(r"^\s*//\s*snippet\.(\w+)", re.IGNORECASE)


def compile_commands(manifest: str) -> dict[str, list[str]]:
    """Each Swift module's compile arguments in SwiftPM's build manifest, by module name."""
    commands = {}
    for block in manifest.split('\n  "')[1:]:
        name = re.search(r"description: \"Compiling Swift Module '([^']+)'", block)
        args = re.search(r"^    args: (\[.*\])$", block, re.MULTILINE)
        if name and args:
            commands[name.group(1)] = json.loads(args.group(1))
    return commands


def extract_arguments(compile: list[str], module: str, output: str) -> list[str]:
    arguments = ["-module-name", module, "-output-dir", output, "-minimum-access-level", "public",
                 "-emit-extension-block-symbols"]
    index = 1  # compile[0] is swiftc
    while index < len(compile):
        argument = compile[index]
        if argument in KEPT_WITH_VALUE and index + 1 < len(compile):
            arguments += [argument, compile[index + 1]]
            index += 2
        elif argument.startswith("-I") and len(argument) > 2:
            arguments.append(argument)
            index += 1
        else:
            index += 1
    return arguments


def snippet_symbol(path: str, package: str) -> dict:
    name = os.path.splitext(os.path.basename(path))[0]
    lines = open(path, encoding="utf-8").read().split("\n")
    if any("snippet." in line and "/*" in line for line in lines):
        raise SystemExit(f"extract-symbol-graphs: {path}: a snippet marker in a block comment (write it as `// snippet.hide`)")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    # The explanation: the leading line comments, up to a blank line, a marker or code.
    explanation = []
    for line in lines[start:]:
        if not line.strip() or MARKER.match(line) or not line.lstrip().startswith("//"):
            break
        explanation.append(line.lstrip()[2:])
    consumed = start + len(explanation)
    first = next((text for text in explanation if text.strip()), "")
    indent = len(first) - len(first.lstrip())
    explanation = [text[min(indent, len(text) - len(text.lstrip())):] for text in explanation]
    while explanation and not explanation[0].strip():
        explanation.pop(0)
    while explanation and not explanation[-1].strip():
        explanation.pop()
    shown, visible = [], True
    for line in lines[consumed:]:
        marker = MARKER.match(line)
        if marker:
            kind = marker.group(1).lower()
            if kind in ("hide", "show"):
                visible = kind == "show"
            else:
                raise SystemExit(f"extract-symbol-graphs: {path}: snippet slices (`snippet.{marker.group(1)}`) are not supported here")
        elif visible and (shown or line.strip()):
            shown.append(line)
    while shown and not shown[-1].strip():
        shown.pop()
    indent = min((len(line) - len(line.lstrip(" ")) for line in shown if line), default=0)
    return {
        "accessLevel": "public", "isVirtual": True, "kind": {"identifier": "snippet", "displayName": "Snippet"},
        "identifier": {"precise": f"$snippet__{package}.{name}", "interfaceLanguage": "swift"},
        "names": {"title": name}, "pathComponents": ["Snippets", name],
        "docComment": {"lines": [{"text": text} for text in explanation]},
        "snippet": {"language": "swift", "lines": [line[indent:] for line in shown]},
    }


def snippet_graph(package: str) -> dict:
    files = sorted(os.path.join(root, name) for root, _, names in os.walk("Snippets")
                   for name in names if name.endswith(".swift"))
    return {
        "metadata": {"formatVersion": {"major": 0, "minor": 1, "patch": 0}, "generator": "snippet-extract"},
        "module": {"name": package, "platform": {}, "isVirtual": True},
        "relationships": [], "symbols": [snippet_symbol(path, package) for path in files],
    }


def is_every_trait_build(commands: dict[str, list[str]], modules: list[str], modules_dir: str) -> bool:
    return all(module in commands and all(trait in commands[module] for trait in TRAITS)
               and os.path.exists(os.path.join(modules_dir, module + ".swiftmodule")) for module in modules)


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    output, modules = sys.argv[1], sys.argv[2:]
    try:
        manifest = open(".build/debug.yaml", encoding="utf-8").read()
    except OSError:
        manifest = ""
    modules_dir = os.path.realpath(".build/debug/Modules")
    commands = compile_commands(manifest)
    if not is_every_trait_build(commands, modules, modules_dir):
        print(f"extract-symbol-graphs: .build/debug is not the every-trait build of {' '.join(modules)}", file=sys.stderr)
        return 1
    snippets = snippet_graph("conduit") if os.path.isdir("Snippets") else None
    for module in modules:
        directory = os.path.join(output, module)
        os.makedirs(directory, exist_ok=True)
        compile = commands[module]
        extractor = os.path.join(os.path.dirname(compile[0]), "swift-symbolgraph-extract")
        subprocess.run([extractor, "-I", modules_dir] + extract_arguments(compile, module, directory), check=True)
        with open(os.path.join(directory, module + ".symbols.json"), encoding="utf-8") as file:
            if not json.load(file)["symbols"]:
                raise SystemExit(f"extract-symbol-graphs: {module} has no public symbol (built without its trait?)")
        if snippets is not None:
            with open(os.path.join(directory, "conduit-snippets.symbols.json"), "w", encoding="utf-8") as file:
                json.dump(snippets, file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
