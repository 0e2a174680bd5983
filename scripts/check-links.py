#!/usr/bin/env python3
"""Nothing in the repository points outside it (`make lint`).

Fails, naming file and line, on:
- a relative Markdown link (or image) in any tracked .md file whose target is not in the
  tree, or whose #anchor names no heading of the target Markdown file;
- a path into `../shared` (or `/work/shared`) in any tracked .md file;
- a mention of `shared/` in a comment or string of any tracked .rs, .proto or .ts file.

"Tracked" is what git knows: committed files plus new files not ignored, so a link to a
file that is only built (clients/web/dist) or only on this machine fails too.
Standard library only.
"""

import os
import re
import subprocess
import sys
from functools import lru_cache

ROOT = subprocess.run(
    ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
).stdout.strip()
os.chdir(ROOT)

FILES = [
    path
    for path in subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    if path and os.path.exists(path)
]
TREE = set(FILES)
DIRS = {os.path.dirname(path) for path in FILES}
while True:
    parents = {os.path.dirname(d) for d in DIRS} - DIRS
    if not parents:
        break
    DIRS |= parents

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
OUTSIDE_MD = re.compile(r"\.\./shared\b|/work/shared\b")
# `shared/` as a path of its own: not `shared_bytes/` or `pre-shared/`.
OUTSIDE_CODE = re.compile(r"(?<![\w-])shared/")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: str) -> frozenset:
    found, seen, in_fence = set(), {}, False
    with open(path, encoding="utf-8") as file:
        for line in file:
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            match = None if in_fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if match:
                base = slug(match.group(1))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def check_markdown(path: str, problems: list) -> None:
    in_fence = False
    with open(path, encoding="utf-8") as file:
        lines = file.read().splitlines()
    for number, line in enumerate(lines, 1):
        where = f"{path}:{number}"
        if OUTSIDE_MD.search(line):
            problems.append(f"{where}: a path outside the repository ({line.strip()})")
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        text = INLINE_CODE.sub("", line)
        targets = [m.group(1) for m in LINK.finditer(text)]
        reference = REFERENCE.match(text)
        if reference:
            targets.append(reference.group(1))
        for target in targets:
            if SCHEME.match(target) or target.startswith("//"):
                continue
            file_part, _, anchor = target.partition("#")
            if file_part:
                base = ROOT if file_part.startswith("/") else os.path.dirname(path)
                resolved = os.path.relpath(
                    os.path.normpath(os.path.join(base, file_part.lstrip("/")))
                )
                if resolved.startswith(".."):
                    problems.append(f"{where}: {target} leaves the repository")
                    continue
                if resolved not in TREE and resolved not in DIRS and resolved != ".":
                    problems.append(f"{where}: {target}: no such file in the tree")
                    continue
            else:
                resolved = path
            if anchor and resolved.endswith(".md") and resolved in TREE:
                if anchor.lower() not in anchors(resolved):
                    problems.append(f"{where}: {target}: no heading #{anchor} in {resolved}")


def check_code(path: str, problems: list) -> None:
    with open(path, encoding="utf-8", errors="replace") as file:
        for number, line in enumerate(file, 1):
            if OUTSIDE_CODE.search(line):
                problems.append(f"{path}:{number}: mentions shared/ ({line.strip()})")


def main() -> int:
    problems: list = []
    for path in sorted(FILES):
        if path.endswith(".md"):
            check_markdown(path, problems)
        elif path.endswith((".rs", ".proto", ".ts")):
            check_code(path, problems)
    if problems:
        print("check-links: links or paths that leave the repository or go nowhere:")
        for problem in problems:
            print(f"  {problem}")
        return 1
    checked = sum(path.endswith(".md") for path in FILES)
    print(f"check-links: {checked} Markdown files, every relative link resolves; nothing points outside")
    return 0


if __name__ == "__main__":
    sys.exit(main())
