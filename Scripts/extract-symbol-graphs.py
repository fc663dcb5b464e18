#!/usr/bin/env python3
"""Extracts the symbol graphs of modules the debug build already compiled, as swift-docc-plugin does.

    python3 Scripts/extract-symbol-graphs.py OUTPUT_DIR MODULE...
    python3 Scripts/extract-symbol-graphs.py --check MODULE...

--check exits 0 when the manifest is the every-trait build's (each MODULE compiled with every
trait, its .swiftmodule there), 1 otherwise: extracted from another build, ConduitSCTP, ConduitSRTP
and ConduitKernelSCTP would be documented empty.

Runs swift-symbolgraph-extract on each MODULE's .swiftmodule in .build/debug, with the search
paths and C module maps of that module's own compile command in SwiftPM's build manifest
(.build/debug.yaml), and the plugin's options: public symbols and up, synthesized members,
extension blocks, no SPI. Writes OUTPUT_DIR/MODULE/MODULE.symbols.json (and MODULE@OTHER for
extensions of other modules' types), and into each MODULE folder the package's snippets
(Snippets/*.swift) as the plugin's snippet-extract writes them (conduit-snippets.symbols.json:
the leading comment is the explanation, `// snippet.hide` and `// snippet.show` bound what is
shown), which the catalogs' @Snippet directives name. Unlike the plugin, it builds nothing: the
plugin's build compiled the product modules a second time. Exits 1 when a module is not in the
manifest.
"""
import json
import os
import re
import subprocess
import sys


def compile_arguments(manifest: str, module: str) -> list[str]:
    for block in manifest.split('\n  "')[1:]:
        if f"description: \"Compiling Swift Module '{module}'" in block:
            match = re.search(r"^    args: (\[.*\])$", block, re.MULTILINE)
            if match:
                return json.loads(match.group(1))
    raise SystemExit(f"extract-symbol-graphs: no compile command for {module} in .build/debug.yaml (build it first)")


def extract_arguments(compile: list[str], module: str, output: str) -> list[str]:
    arguments = ["-module-name", module, "-output-dir", output, "-minimum-access-level", "public",
                 "-emit-extension-block-symbols"]
    for index, argument in enumerate(compile[:-1]):
        following = compile[index + 1]
        if argument in ("-I", "-target", "-module-cache-path", "-swift-version"):
            arguments += [argument, following]
        elif argument == "-Xcc" and compile[index - 1] != "-Xcc":
            arguments += ["-Xcc", following]
        elif argument.startswith("-I") and len(argument) > 2:
            arguments.append(argument)
    return arguments


def snippet_symbol(path: str, package: str) -> dict:
    name = os.path.splitext(os.path.basename(path))[0]
    lines = open(path, encoding="utf-8").read().split("\n")
    marker = lambda line: line.strip() in ("// snippet.hide", "// snippet.show")
    explanation = []
    for line in lines:
        if not line.strip() or marker(line) or not line.lstrip().startswith("//"):
            break
        explanation.append(line.lstrip()[2:])
    consumed = len(explanation)
    indent = min((len(text) - len(text.lstrip()) for text in explanation if text.strip()), default=0)
    explanation = [text[indent:] for text in explanation]
    while explanation and not explanation[-1].strip():
        explanation.pop()
    shown, visible = [], True
    for line in lines[consumed:]:
        if marker(line):
            visible = line.strip() == "// snippet.show"
        elif visible and (shown or line.strip()):
            shown.append(line)
    while shown and not shown[-1].strip():
        shown.pop()
    indent = min((len(line) - len(line.lstrip(" ")) for line in shown if line), default=0)
    shown = [line[indent:] for line in shown]
    return {
        "accessLevel": "public", "isVirtual": True, "kind": {"identifier": "snippet", "displayName": "Snippet"},
        "identifier": {"precise": f"$snippet__{package}.{name}", "interfaceLanguage": "swift"},
        "names": {"title": name}, "pathComponents": ["Snippets", name],
        "docComment": {"lines": [{"text": text} for text in explanation]},
        "snippet": {"language": "swift", "lines": shown},
    }


def snippet_graph(package: str) -> dict:
    files = sorted(os.path.join("Snippets", name) for name in os.listdir("Snippets") if name.endswith(".swift"))
    return {
        "metadata": {"formatVersion": {"major": 0, "minor": 1, "patch": 0}, "generator": "snippet-extract"},
        "module": {"name": package, "platform": {}, "isVirtual": True},
        "relationships": [], "symbols": [snippet_symbol(path, package) for path in files],
    }


TRAITS = ("-DSCTP", "-DSRTP", "-DKernelSCTP", "-DNATS", "-DZlib")


def is_current(manifest: str, modules: list[str], modules_dir: str) -> bool:
    for module in modules:
        try:
            compile = compile_arguments(manifest, module)
            os.stat(os.path.join(modules_dir, module + ".swiftmodule"))
        except (SystemExit, OSError):
            return False
        if not all(trait in compile for trait in TRAITS):
            return False
    return True


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
    if output == "--check":
        return 0 if is_current(manifest, modules, modules_dir) else 1
    for module in modules:
        directory = os.path.join(output, module)
        os.makedirs(directory, exist_ok=True)
        arguments = extract_arguments(compile_arguments(manifest, module), module, directory)
        subprocess.run(["swift-symbolgraph-extract", "-I", modules_dir] + arguments, check=True)
        if os.path.isdir("Snippets"):
            with open(os.path.join(directory, "conduit-snippets.symbols.json"), "w", encoding="utf-8") as file:
                json.dump(snippet_graph("conduit"), file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
