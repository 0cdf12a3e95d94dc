#!/usr/bin/env python3
"""Checks that docs/tutorial.md shows the tutorial's programs and outputs as they are.

Every fenced block in the tutorial must come right after a marker line naming what it
shows, and must be exactly that:

  <!-- example: 02_references.cpp -->          the whole file, less its region markers
  <!-- example: 02_references.cpp#session -->  the lines between the two
                                               `// [tutorial:session]` lines of the file
  <!-- output: 02_references.output -->       the whole file (the program's stdout,
                                               itself compared with a run by ctest)

Paths are relative to the directory of this script. Every NN_name.cpp there and its
NN_name.output must be shown at least once.

  check_tutorial.py TUTORIAL              exit 0 when it matches, 1 with the differences
  check_tutorial.py --self-test TUTORIAL  exit 0 when the check catches each kind of drift
"""
import difflib
import pathlib
import re
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parent
MARKER = re.compile(r"^<!-- (example|output): ([\w.-]+?)(?:#([\w-]+))? -->$")
REGION = re.compile(r"^\s*// \[tutorial:([\w-]+)\]\s*$")
FENCE = re.compile(r"^```")


def shown_text(kind, name, region):
    """What a marker says its block holds, or raises ValueError."""
    path = EXAMPLES / name
    if not path.is_file():
        raise ValueError(f"{name} does not exist in {EXAMPLES}")
    lines = path.read_text().splitlines(keepends=True)
    if kind == "output":
        if region:
            raise ValueError(f"an output block shows a whole file, not a region ({name}#{region})")
        return "".join(lines)
    if region is None:
        return "".join(line for line in lines if not REGION.match(line))
    bounds = [i for i, line in enumerate(lines) if (m := REGION.match(line)) and m.group(1) == region]
    if len(bounds) != 2:
        raise ValueError(f"{name} has {len(bounds)} `// [tutorial:{region}]` lines, not 2")
    return "".join(line for line in lines[bounds[0] + 1 : bounds[1]] if not REGION.match(line))


def problems(tutorial_text):
    """The list of differences between the tutorial and the files it shows."""
    found = []
    shown = set()
    lines = tutorial_text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if not FENCE.match(lines[i]):
            i += 1
            continue
        start = i
        end = start + 1
        while end < len(lines) and not FENCE.match(lines[end]):
            end += 1
        if end == len(lines):
            found.append(f"tutorial line {start + 1}: a code block is never closed")
            break
        block = "".join(lines[start + 1 : end])
        marker = MARKER.match(lines[start - 1].rstrip("\n")) if start > 0 else None
        if marker is None:
            found.append(f"tutorial line {start + 1}: a code block without an `<!-- example: FILE -->` "
                         "or `<!-- output: FILE -->` line right before it")
        else:
            kind, name, region = marker.groups()
            shown.add(name)
            try:
                expected = shown_text(kind, name, region)
                if block != expected:
                    diff = difflib.unified_diff(expected.splitlines(keepends=True), block.splitlines(keepends=True),
                                                f"{name}{'#' + region if region else ''}", "tutorial.md")
                    found.append(f"tutorial line {start + 1}: the block differs from what it names:\n" +
                                 "".join(diff))
            except ValueError as e:
                found.append(f"tutorial line {start}: {e}")
        i = end + 1
    for program in sorted(EXAMPLES.glob("[0-9][0-9]_*.cpp")):
        for name in (program.name, program.with_suffix(".output").name):
            if name not in shown:
                found.append(f"{name} is not shown in the tutorial")
    return found


def self_test(tutorial_text):
    """Each kind of drift must be reported; returns what went unnoticed."""
    if problems(tutorial_text):
        return ["the tutorial does not pass the check to begin with"]
    unnoticed = []
    lines = tutorial_text.splitlines(keepends=True)
    fences = [i for i, line in enumerate(lines) if FENCE.match(line)]
    openings = fences[0::2]
    for opening in openings:
        changed = list(lines)
        changed[opening + 1] = changed[opening + 1].rstrip("\n") + " \n" # one trailing space
        if not problems("".join(changed)):
            unnoticed.append(f"a changed line in the block at tutorial line {opening + 1}")
        changed = list(lines)
        del changed[opening - 1] # the marker
        if not problems("".join(changed)):
            unnoticed.append(f"the block at tutorial line {opening + 1} without its marker")
    first = openings[0]
    changed = list(lines)
    changed[first - 1] = changed[first - 1].replace(" -->", "#no-such-region -->")
    if not problems("".join(changed)):
        unnoticed.append("a marker naming a region that does not exist")
    changed = [line for line in lines if "01_first_cache.output" not in line]
    if not problems("".join(changed)):
        unnoticed.append("an example whose output is not shown")
    return unnoticed


def main(argv):
    testing = argv[1:2] == ["--self-test"]
    args = argv[2:] if testing else argv[1:]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    text = pathlib.Path(args[0]).read_text()
    found = self_test(text) if testing else problems(text)
    for p in found:
        print(("not detected: " if testing else "") + p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
