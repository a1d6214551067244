#!/usr/bin/env bash
# Checks that every relative link in the user documentation resolves: README.md, CONTRIBUTING.md,
# CHANGELOG.md and docs/*.md. A link to a file must name an existing file or folder (relative to
# the page); a link with an anchor (page.md#section, or #section on the same page) must name a
# heading of that Markdown page, as GitHub spells its anchors. Links inside code blocks and code
# spans are not links; http(s) and mailto links are not checked (no network). mkdocs.yml's nav
# must list every page of docs/.
#   tools/check_docs.sh            exit 0: every link resolves; 1: each broken one printed
set -euo pipefail
cd "$(dirname "$0")/.."

python3 - README.md CONTRIBUTING.md CHANGELOG.md docs/*.md <<'PY'
import os
import re
import sys
import unicodedata

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target), target up to the first space or closing parenthesis.
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def strip_code(line):
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def slug(text):
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces to -."""
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"[*_]{1,3}([^*_]+)[*_]{1,3}", r"\1", text)
    out = []
    for ch in text.strip().lower():
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LN":
            out.append("-" if ch == " " else ch)
    return "".join(out)


anchor_cache = {}


def anchors(path):
    if path not in anchor_cache:
        found, counts, fenced = set(), {}, False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    fenced = not fenced
                    continue
                m = None if fenced else HEADING.match(line)
                if m:
                    base = slug(m.group(2))
                    n = counts.get(base, 0)
                    counts[base] = n + 1
                    found.add(base if n == 0 else f"{base}-{n}")
        anchor_cache[path] = found
    return anchor_cache[path]


broken = []
for page in sys.argv[1:]:
    if not os.path.isfile(page):
        continue
    fenced = False
    with open(page, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            for m in LINK.finditer(strip_code(line)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                    continue
                path, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                where = f"{page}:{number}: {target}"
                if not os.path.exists(resolved):
                    broken.append(f"{where}: no such file {resolved}")
                elif anchor and resolved.endswith(".md") and os.path.isfile(resolved):
                    if anchor.lower() not in anchors(resolved):
                        broken.append(f"{where}: no heading #{anchor} in {resolved}")

# The site's nav (mkdocs.yml) lists every page of docs/, and only pages that exist.
if os.path.isfile("mkdocs.yml"):
    with open("mkdocs.yml", encoding="utf-8") as f:
        nav = set(re.findall(r"^\s*-\s*[^:\n]+:\s*(\S+\.md)\s*$", f.read(), re.M))
    pages = {os.path.relpath(p, "docs") for p in sys.argv[1:] if p.startswith("docs/") and os.path.isfile(p)}
    for missing in sorted(pages - nav):
        broken.append(f"mkdocs.yml: docs/{missing} is not in the nav")
    for extra in sorted(nav - pages):
        broken.append(f"mkdocs.yml: the nav names docs/{extra}, which does not exist")

for b in broken:
    print(f"check_docs: {b}")
if broken:
    print(f"check_docs: {len(broken)} problem(s)")
    sys.exit(1)
print(f"check_docs: every relative link of {len(sys.argv) - 1} pages resolves")
PY
