#!/usr/bin/env python3
"""Generates single_include/compile_cache/ from include/.

single_include/compile_cache/compile_cache.hpp starts at the umbrella header and
inlines every `#include <compile_cache/...>` the first time it is met (later ones
vanish); standard and Boost includes stay as they are. Each inlined header is framed
by `// ---- begin <path>` / `// ---- end <path>` lines: CMake reads them to make the
forwarding headers of the single-header test build (COMPILE_CACHE_TEST_SINGLE_HEADER).

Optional headers — those under a folder named in OPTIONAL_DIRS or matching one of
OPTIONAL_HEADERS, which need something beyond the standard library and Boost (the LLVM
adapter, the Redis storage, the SQLite storage) or are for users' tests only (testing/:
the conformance kit) — are not inlined: each is copied to single_include/compile_cache/ at its own path, with its
includes of inlined headers replaced by one include of the single header.

Every other header under include/ is in the single header: those the umbrella header
does not reach are inlined after it, in path order (a public one among them gets a
warning: the umbrella header should include it).

Deterministic: no timestamps, no absolute paths. Usage:

    scripts/amalgamate.py            # writes single_include/compile_cache/
    scripts/amalgamate.py --check    # exit 1 (and show a diff) if the committed files differ
"""
import difflib
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "include"
OUTPUT_DIR = ROOT / "single_include"
UMBRELLA = "compile_cache/compile_cache.hpp"
# Folders (relative to include/compile_cache/) whose headers need an optional dependency,
# or are not for the umbrella header (testing/: the conformance kit, for users' tests);
# and single headers that do (patterns relative to include/compile_cache/).
OPTIONAL_DIRS = ("llvm", "testing", "signing", "compression")
# src.hpp is copied as well: the one translation unit of separate compilation includes
# it, and with it the single header, before anything else (detail/config.hpp). The remote
# chosen by URL needs no library itself but serves only with the optional remotes.
OPTIONAL_HEADERS = ("storage/redis_storage.hpp", "storage/sqlite_storage.hpp", "storage/remote_by_url.hpp", "src.hpp")
# Folders below include/compile_cache/ (any depth) whose headers all need an optional
# dependency: the storages of their own library.
OPTIONAL_SUBTREES = ("storage/redis", "storage/sqlite", "storage/http")
# Forwarding headers left at an old path for one release: copied, not inlined (a host of the
# single header that includes the old path gets the single header through them).
FORWARDING = re.compile(r'^// compile_cache: forwarding header')

OWN_INCLUDE = re.compile(r'^\s*#\s*include\s*<(compile_cache/[^>]+)>')
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"')
PRAGMA_ONCE = re.compile(r'^\s*#\s*pragma\s+once\s*$')
IF_OPEN = re.compile(r'^\s*#\s*if(n?def)?\b')
IF_CLOSE = re.compile(r'^\s*#\s*endif\b')


class AmalgamateError(Exception):
    pass


def is_optional(rel):
    path = pathlib.PurePosixPath(rel)
    parts = path.parts
    if len(parts) > 2 and parts[1] in OPTIONAL_DIRS:
        return True
    inner = pathlib.PurePosixPath(*parts[1:]) if len(parts) > 1 else path
    if any(inner.as_posix().startswith(tree + "/") for tree in OPTIONAL_SUBTREES):
        return True
    if (INCLUDE / rel).is_file() and FORWARDING.match((INCLUDE / rel).read_text()):
        return True
    return any(inner.match(pattern) and len(inner.parts) == len(pathlib.PurePosixPath(pattern).parts)
               for pattern in OPTIONAL_HEADERS)


def check_line(rel, number, line, depth):
    """Rejects what inlining cannot keep correct."""
    if QUOTED_INCLUDE.match(line):
        raise AmalgamateError(f"{rel}:{number}: use #include <compile_cache/...>, not a quoted include")
    if OWN_INCLUDE.match(line) and depth > 0:
        # Inlined once, inside a conditional block, the header would be missing
        # wherever the condition is false.
        raise AmalgamateError(f"{rel}:{number}: an #include of a compile_cache header inside "
                              "#if/#ifdef cannot be amalgamated; include it unconditionally")


def inline(rel, seen, out):
    if rel in seen:
        return
    path = INCLUDE / rel
    if not path.is_file():
        raise AmalgamateError(f"{rel} is included but does not exist")
    if is_optional(rel):
        raise AmalgamateError(f"{rel} is an optional header; the umbrella and its headers must not include it")
    seen.add(rel)
    out.append(f"// ---- begin {rel}\n")
    depth = 0
    for number, line in enumerate(path.read_text().splitlines(keepends=True), 1):
        check_line(rel, number, line, depth)
        if IF_OPEN.match(line):
            depth += 1
        elif IF_CLOSE.match(line):
            depth -= 1
        if PRAGMA_ONCE.match(line):
            continue
        m = OWN_INCLUDE.match(line)
        if m:
            inline(m.group(1), seen, out)
            continue
        out.append(line)
    if not out[-1].endswith("\n"):
        out.append("\n")
    out.append(f"// ---- end {rel}\n")


# Headers that need neither Boost nor RTTI, included by optional headers that must
# compile without RTTI (the LLVM adapter's -fno-rtti side): an optional copy inlines
# them (they have include guards, so the single header's copy and theirs are one)
# instead of including the single header, which needs RTTI. They include only each other.
STANDALONE_DETAIL = ("compile_cache/detail/config.hpp", "compile_cache/detail/made_once.hpp",
                     "compile_cache/detail/build_id.hpp")


def standalone_text(rel, seen):
    """A STANDALONE_DETAIL header's text for an optional copy, after that of the headers
    of STANDALONE_DETAIL it includes; nothing for one in `seen` (already inlined)."""
    if rel in seen:
        return []
    seen.add(rel)
    out = [f"// ---- inlined {rel}\n"]
    for line in (INCLUDE / rel).read_text().splitlines(keepends=True):
        m = OWN_INCLUDE.match(line)
        if m:
            if m.group(1) not in STANDALONE_DETAIL:
                raise SystemExit(f"{rel} includes {m.group(1)}, which is not in STANDALONE_DETAIL")
            out.extend(standalone_text(m.group(1), seen))
        elif not PRAGMA_ONCE.match(line):
            out.append(line)
    out.append(f"// ---- end of {rel}\n")
    return out


def optional_copy(rel, inlined):
    """An optional header as it goes to single_include/: includes of inlined headers
    become one include of the single header; those of STANDALONE_DETAIL, their text."""
    out = []
    forwarded = False
    standalone_seen = set()
    for line in (INCLUDE / rel).read_text().splitlines(keepends=True):
        m = OWN_INCLUDE.match(line)
        if m and m.group(1) in STANDALONE_DETAIL:
            out.extend(standalone_text(m.group(1), standalone_seen))
            continue
        if m and m.group(1) in inlined:
            if not forwarded:
                out.append(f"#include <{UMBRELLA}>\n")
                forwarded = True
            continue
        out.append(line)
    return "".join(out)


def generate():
    """{path relative to single_include/: text} for every file that belongs there."""
    out = [
        "// compile_cache: single-header edition, generated by scripts/amalgamate.py from include/.\n",
        "// Do not edit: change include/ and regenerate.\n",
        "#pragma once\n",
    ]
    inlined = set()
    inline(UMBRELLA, inlined, out)

    # Everything without an optional dependency goes in, also what the umbrella does not
    # reach (a detail header that only its tests include yet): appended in path order.
    headers = sorted(p.relative_to(INCLUDE).as_posix() for p in (INCLUDE / "compile_cache").rglob("*.hpp"))
    for h in headers:
        if h in inlined or is_optional(h):
            continue
        if "/detail/" not in h:
            print(f"amalgamate: warning: {UMBRELLA} does not include {h}; it is in the single header,"
                  " but not in what the umbrella header gives", file=sys.stderr)
        inline(h, inlined, out)
    files = {UMBRELLA: "".join(out)}
    for h in headers:
        if is_optional(h):
            files[h] = optional_copy(h, inlined)
    return files


def committed():
    root = OUTPUT_DIR / "compile_cache"
    if not root.is_dir():
        return {}
    return {p.relative_to(OUTPUT_DIR).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def check(files):
    current = committed()
    stale = False
    for rel in sorted(set(files) | set(current)):
        want, have = files.get(rel), current.get(rel)
        if want == have:
            continue
        stale = True
        if have is None:
            print(f"amalgamate: single_include/{rel} is missing", file=sys.stderr)
        elif want is None:
            print(f"amalgamate: single_include/{rel} should not exist (its header is gone)", file=sys.stderr)
        else:
            diff = list(difflib.unified_diff(have.splitlines(keepends=True), want.splitlines(keepends=True),
                                             f"single_include/{rel} (committed)",
                                             f"single_include/{rel} (from include/)", n=1))
            print(f"amalgamate: single_include/{rel} is out of date:", file=sys.stderr)
            sys.stderr.writelines(diff[:40])
            if len(diff) > 40:
                print(f"  ... {len(diff) - 40} more diff lines", file=sys.stderr)
    if stale:
        print("amalgamate: run scripts/amalgamate.py and commit single_include/", file=sys.stderr)
        return 1
    return 0


def write(files):
    for rel in committed():
        if rel not in files:
            (OUTPUT_DIR / rel).unlink()
    for rel, text in files.items():
        path = OUTPUT_DIR / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
    return 0


def main():
    try:
        files = generate()
    except AmalgamateError as e:
        print(f"amalgamate: {e}", file=sys.stderr)
        return 2
    return check(files) if "--check" in sys.argv[1:] else write(files)


if __name__ == "__main__":
    sys.exit(main())
