#!/usr/bin/env python3
"""Fails on lit tests with a `PREFIX-NOT:` line that checks nothing.

  lint_check_not.py PATH...   (lit test files, or directories to walk)

FileCheck checks a `CHECK-NOT:` pattern only in the text between the matches of
the positive directives around it. One with no positive directive after it is
checked from the last positive match to the end of the output, in MLIR output
the module's closing braces rather than the function or region the test means,
so it passes whatever the compiler does (issue #17). The same holds for one
that follows the check of a function's `return`: only the function's closing
brace comes after it. A negative check must sit between two positive ones that
bracket the region it is about (e.g. before the function's `CHECK: return`, or
before the next function's `CHECK-LABEL:`); what must appear nowhere in the
output is an `--implicit-check-not`.

Each `FileCheck %s` in a file's RUN lines is read for its prefixes (`CHECK`, or
those of `--check-prefix`/`--check-prefixes`, with `=` or a separate argument,
one dash or two); prefixes given to one FileCheck share one ordered stream of
directives, as in FileCheck. A `P-NOT:` directive is reported when a run that
uses P has no positive directive (`:`, `-NEXT:`, `-SAME:`, `-LABEL:`, `-DAG:`,
`-EMPTY:`, `-COUNT-n:`) of any of its prefixes later in the file, or when the
positive directive before it checks a `return`, `func.return` or
`llvm.return`. `COM:` and `RUN:` lines hold no directives. Files without
FileCheck (`--verify-diagnostics` tests) and runs against another check file
are skipped. When walking directories, those named `Inputs` are skipped, as
lit.cfg.py excludes them; files named on the command line are always read.

Prints `file:line: P-NOT after the last positive P check (checks nothing)` (or
`... after the check of a return ...`) per offender and exits 1; otherwise
prints one summary line and exits 0.
"""
import argparse
import os
import re
import shlex
import sys

# lit.cfg.py's suffixes (".toml.test" ends in ".test") and LLVM's usual ones.
LIT_SUFFIXES = (".mlir", ".test", ".ll", ".td")
EXCLUDED_DIRS = {"Inputs"}

# FileCheck's default comment prefixes: where one of them comes first, the
# rest of the line is no directive.
COMMENT_PREFIXES = ("COM", "RUN")

# What follows a prefix in a directive: ":", "-NEXT:", "-COUNT-3:", "-NOT{LITERAL}:".
SUFFIX_RE = re.compile(
    r"(?:-(NEXT|SAME|NOT|DAG|LABEL|EMPTY|COUNT-[0-9]+))?(?:\{LITERAL\})?:")

# A positive pattern that matches a function's terminator.
RETURN_RE = re.compile(r"^\s*(?:(?:func|llvm)\.)?return\b")

# FileCheck options whose value may be the next argument (`-check-prefix X`).
VALUE_OPTIONS = {
    "check-prefix", "check-prefixes", "comment-prefixes", "implicit-check-not",
    "input-file", "dump-input", "dump-input-filter", "dump-input-context",
}

TRAILING = "after the last positive {0} check (checks nothing)"
AFTER_RETURN = "after the check of a return (only the function's closing brace follows)"


def run_commands(lines):
    """Yields each RUN command, its `\\` continuation lines joined."""
    pending = ""
    for line in lines:
        idx = line.find("RUN:")
        if idx < 0:
            continue
        text = line[idx + len("RUN:"):].rstrip()
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        yield pending + text
        pending = ""
    if pending:
        yield pending


def filecheck_prefix_sets(commands):
    """Returns the prefixes of each `FileCheck %s` in the commands."""
    sets = []
    for command in commands:
        for segment in re.split(r"\|\||&&|[|;]", command):
            try:
                tokens = shlex.split(segment)
            except ValueError:
                tokens = segment.split()
            starts = [i for i, t in enumerate(tokens) if os.path.basename(t) == "FileCheck"]
            if not starts:
                continue
            args = tokens[starts[0] + 1:]
            prefixes = []
            check_file = None
            i = 0
            while i < len(args):
                arg = args[i]
                i += 1
                if arg in ("<", ">", ">>", "2>", "2>>", "&>"):
                    i += 1  # the redirection's file
                    continue
                if re.match(r"[0-9&]*[<>]", arg):
                    continue
                if arg.startswith("-"):
                    name, eq, value = arg.lstrip("-").partition("=")
                    if not eq and name in VALUE_OPTIONS and i < len(args):
                        value = args[i]
                        i += 1
                    if name in ("check-prefix", "check-prefixes"):
                        prefixes.extend(p for p in value.split(",") if p)
                    continue
                if check_file is None:
                    check_file = arg
            if check_file == "%s":
                sets.append(tuple(prefixes) or ("CHECK",))
    return sets


def directives(lines, prefixes):
    """Yields (line number, prefix, kind, pattern) per directive, one per line
    at most as in FileCheck; kind is "" for `P:`, else "NOT", "NEXT", ..."""
    names = sorted(set(prefixes) | set(COMMENT_PREFIXES), key=len, reverse=True)
    prefix_re = re.compile("|".join(re.escape(n) for n in names))
    for number, line in enumerate(lines, 1):
        pos = 0
        while True:
            m = prefix_re.search(line, pos)
            if not m:
                break
            pos = m.start() + 1
            # FileCheck's IsPartOfWord: a prefix is not the tail of a longer word.
            before = line[m.start() - 1] if m.start() else " "
            if before.isalnum() or before in "-_":
                continue
            suffix = SUFFIX_RE.match(line, m.end())
            if not suffix:
                continue
            if m.group(0) not in COMMENT_PREFIXES:
                yield number, m.group(0), suffix.group(1) or "", line[suffix.end():]
            break  # the rest of the line is the pattern, or a comment


def lint_file(path):
    """Returns (line, prefix, reason) for each NOT directive that checks nothing."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    offenders = {}
    for prefixes in filecheck_prefix_sets(run_commands(lines)):
        found = list(directives(lines, prefixes))
        seen_positive = False
        for number, prefix, kind, _ in reversed(found):
            if kind != "NOT":
                seen_positive = True
            elif not seen_positive:
                offenders[number] = (prefix, TRAILING.format(prefix))
        previous = None
        for number, prefix, kind, pattern in found:
            if kind != "NOT":
                previous = pattern
            elif previous is not None and RETURN_RE.match(previous):
                offenders.setdefault(number, (prefix, AFTER_RETURN))
    return sorted((n, p, r) for n, (p, r) in offenders.items())


def lit_files(paths):
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in EXCLUDED_DIRS)
            for name in sorted(files):
                if name.endswith(LIT_SUFFIXES):
                    yield os.path.join(root, name)


def main():
    parser = argparse.ArgumentParser(
        description="Report FileCheck NOT directives that check nothing.")
    parser.add_argument("paths", nargs="+", help="lit test files or directories")
    args = parser.parse_args()
    for path in args.paths:
        if not os.path.exists(path):
            parser.error(f"{path}: no such file or directory")

    scanned = 0
    offenders = 0
    for path in lit_files(args.paths):
        scanned += 1
        for number, prefix, reason in lint_file(path):
            offenders += 1
            print(f"{path}:{number}: {prefix}-NOT {reason}")
    if offenders:
        return 1
    print(f"lint_check_not: OK, {scanned} lit files scanned, no trailing CHECK-NOT")
    return 0


if __name__ == "__main__":
    sys.exit(main())
