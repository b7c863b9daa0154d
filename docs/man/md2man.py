#!/usr/bin/env python3
"""Render docs/POLICY.md as the man page cordon-policy(5), so the policy reference has one source.

    md2man.py [--date DATE] [--source "cordon X.Y"] docs/POLICY.md > docs/man/cordon-policy.5

Understands exactly the Markdown that POLICY.md uses: a "# name(section) — title" first line,
"##" sections, "###" subsections, paragraphs, "- " bullet lists (continued by indented lines),
fenced code blocks, pipe tables (rendered with tbl), and inline `code`, **bold**, *italic*.
The page is committed; `make update-man` regenerates it and tests/integration/man-pages.sh
fails when it is out of date.
"""
import argparse
import re
import sys

SYMBOLS = {
    "\u2264": r"\(<=",  # ≤
    "\u2265": r"\(>=",  # ≥
    "\u2192": r"\(->",  # →
    "\u2014": r"\(em",  # —
    "\u2013": r"\(en",  # –
    "\u2026": r".\|.\|.",  # …
    "\u00d7": r"\(mu",  # ×
    "\u00a7": r"\(sc",  # §
}


def escape(text):
    """Plain text to troff: backslashes, hyphen-minus, the symbols above."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    for k, v in SYMBOLS.items():
        text = text.replace(k, v)
    if any(ord(c) > 127 for c in text):
        raise SystemExit("md2man: non-ASCII character without a troff name in: " + text)
    return text


def inline(text, breakable=False):
    """Markdown inline markup to troff font changes. breakable: allow line breaks after "_",
    "." and "/" in code (narrow table columns)."""
    out = []
    parts = re.split(r"(`[^`]*`)", text)
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) >= 2:
            code = part[1:-1].replace("\\|", "|")
            code = escape(code)
            if breakable:
                code = re.sub(r"([_./])(?=.)", r"\1\\:", code)
            out.append("\\fB" + code + "\\fR")
            continue
        part = part.replace("\\|", "|")
        s = escape(part)
        s = re.sub(r"\*\*(.+?)\*\*", r"\\fB\1\\fR", s)
        s = re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"\\fI\1\\fR", s)
        # man page references: name(5) -> \fBname\fR(5)
        s = re.sub(r"\b([a-z][a-z0-9.\\-]*)\(([1-8])\)", r"\\fB\1\\fR(\2)", s)
        out.append(s)
    return "".join(out)


def textline(s):
    """A troff text line: protect a leading control character."""
    if s.startswith((".", "'")):
        return "\\&" + s
    return s


def split_row(line):
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    cells = re.split(r"(?<!\\)\|", line)
    return [c.strip() for c in cells]


def table(rows, out):
    head, body = rows[0], rows[2:]
    n = len(head)
    # Ragged right inside the table: narrow justified columns only warn "cannot adjust line".
    out.append(".ad l")
    out.append(".TS")
    out.append("allbox tab(\t);")
    out.append(" ".join(["lb"] * n))
    out.append("l " + " ".join(["lx"] * (n - 1)) + ".")
    out.append("\t".join(textline(inline(c)) for c in head))
    for r in body:
        r = (r + [""] * n)[:n]
        cells = [textline(inline(r[0]))]
        for c in r[1:]:
            cells.append("T{\n" + textline(inline(c, True)) + "\nT}" if c else "")
        out.append("\t".join(cells))
    out.append(".TE")
    out.append(".ad")


def convert(md, date, source):
    lines = md.split("\n")
    out = []
    m = re.match(r"# ([a-z.-]+)\(([1-8])\)", lines[0])
    if not m:
        raise SystemExit("md2man: the first line must be '# name(section) ...'")
    name, section = m.group(1), m.group(2)
    manual = {"1": "User Commands", "5": "File Formats", "8": "System Administration"}[section]
    out.append("'\\\" t")
    out.append(".\\\" Generated from docs/POLICY.md by docs/man/md2man.py: edit that file, then")
    out.append(".\\\" run `make update-man`.")
    out.append('.TH %s %s "%s" "%s" "%s"' % (name.upper(), section, date, source, manual))
    i = 1
    section_name = ""
    para = []
    need_pp = False

    def flush():
        nonlocal para, need_pp
        if para:
            text = " ".join(para)
            if section_name == "NAME":
                text = text.replace(" \u2014 ", " \\- ")
                out.append(textline(escape(text).replace("\\e\\-", "\\-")))
            else:
                if need_pp:
                    out.append(".PP")
                out.append(textline(inline(text)))
            need_pp = True
        para = []

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            i += 1
            out.append(".PP" if need_pp else ".PP")
            out.append(".RS 4")
            out.append(".nf")
            while i < len(lines) and not lines[i].startswith("```"):
                out.append(textline(escape(lines[i])))
                i += 1
            out.append(".fi")
            out.append(".RE")
            need_pp = True
            i += 1
            continue
        if line.startswith("### "):
            flush()
            out.append('.SS "%s"' % inline(line[4:]).replace('"', '\\(dq'))
            need_pp = False
        elif line.startswith("## "):
            flush()
            section_name = line[3:].strip()
            out.append(".SH %s" % section_name)
            need_pp = False
        elif line.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(split_row(lines[i]))
                i += 1
            out.append(".PP" if need_pp else ".PP")
            table(rows, out)
            need_pp = True
            continue
        elif line.startswith("- "):
            flush()
            item = [line[2:]]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                item.append(lines[i].strip())
                i += 1
            out.append(".IP \\(bu 2")
            out.append(textline(inline(" ".join(item))))
            need_pp = True
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--date", default="2026-11-29")
    ap.add_argument("--source", default="cordon")
    ap.add_argument("input")
    a = ap.parse_args()
    with open(a.input, encoding="utf-8") as f:
        sys.stdout.write(convert(f.read(), a.date, a.source))


if __name__ == "__main__":
    main()
