#!/usr/bin/python3
"""Writes a man page from a program's own --help (and its subcommands'), so the page can never
drift from the options the program accepts. Run by the build (packaging/CMakeLists.txt).

Usage: gen-man.py --name NAME --section N --summary TEXT --version V [--sub SUB]...
                  [--extra FILE.roff] --output PAGE -- COMMAND [ARGS...]

COMMAND --help is read, then COMMAND SUB --help for each --sub. The help texts are the ones
CLI11 and argparse print: usage lines, paragraphs, "Heading:" lines, and indented lists whose
items start with an option (or a name) and continue on deeper-indented lines. Items become
.TP entries; deeper indentation inside an item (sub-lists, tables) and indented blocks that are
not lists (examples) are kept verbatim; everything else is filled text. --extra is roff appended
as is (FILES, SEE ALSO, ...). Standard library only.
"""
import argparse
import datetime
import os
import re
import subprocess
import sys

# An item line: some indentation, a head (an option, or a name), two or more spaces, its text.
ITEM = re.compile(r"^( {1,8})(\S(?:.*?\S)?)(?: {2,}(\S.*))?$")
HEADING = re.compile(r"^([A-Za-z][A-Za-z ]{0,40}):$")


def esc(text):
    """Text made safe for roff: backslashes, minus signs (options stay searchable and never
    hyphenated), and a leading control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def head_roff(head):
    """An item's head: option names bold, their arguments italic ("-h,--help", "--cores N")."""
    out = []
    for token in re.split(r"(\s+|,\s*)", head):
        if not token or token.isspace() or token.strip() == ",":
            out.append(token)
        elif token.startswith("-"):
            name, eq, value = token.partition("=")
            out.append(f"\\fB{esc(name)}\\fR" + (f"={esc(value)}" if eq else ""))
        else:
            out.append(f"\\fI{esc(token)}\\fR")
    return "".join(out)


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def paragraphs(text):
    """Blocks of non-blank lines."""
    block = []
    for line in text.expandtabs().splitlines():
        if line.strip():
            block.append(line.rstrip())
        elif block:
            yield block
            block = []
    if block:
        yield block


def looks_like_list(lines):
    """True when the indented block is a list of items (an option or two columns), not verbatim
    text such as examples."""
    base = min(indent_of(line) for line in lines)
    firsts = [line for line in lines if indent_of(line) == base]
    if any(line.lstrip().startswith("-") for line in firsts):
        return True
    return all(ITEM.match(line) and ITEM.match(line).group(3) for line in firsts)


def render_items(lines, out):
    """.TP entries. Continuation lines at the description's column are filled; deeper ones (a
    sub-list, a table) are kept verbatim, indented under the item."""
    base = min(indent_of(line) for line in lines)
    items = []
    for line in lines:
        if indent_of(line) == base:
            m = ITEM.match(line)
            head, text = (m.group(2), m.group(3)) if m else (line.strip(), None)
            items.append((head, [text] if text else [], len(line) - len(text) if text else None))
        elif items:
            items[-1][1].append(line)
    for head, body, column in items:
        out.append(".TP")
        out.append(head_roff(head))
        if column is None and len(body) > 0:
            column = indent_of(body[0])
        verbatim = False
        for n, line in enumerate(body):
            deeper = n > 0 and indent_of(line) > column
            if deeper and not verbatim:
                out.append(".nf")
                verbatim = True
            elif not deeper and verbatim:
                out.append(".fi")
                verbatim = False
            if verbatim:  # leading spaces kept: no-fill mode indents by them inside the item
                out.append("\\&" + esc(line[column:]))
            else:
                out.append(esc(line.strip()))
        if verbatim:
            out.append(".fi")


def render_block(lines, out):
    """An indented block that is not a list: verbatim."""
    base = min(indent_of(line) for line in lines)
    out += [".PP", ".RS", ".nf"] + [esc(line[base:]) for line in lines] + [".fi", ".RE"]


def section_name(heading):
    """Man page section names for the help texts' headings."""
    h = heading.strip().lower()
    return {"options": "OPTIONS", "positional arguments": "ARGUMENTS",
            "exit status": "EXIT STATUS"}.get(h, heading.strip().upper())


def split_usage(block):
    """(usage lines, rest) when the block starts with a Usage line; continuation lines of a
    wrapped usage (deeper indentation) and further "       prog ..." forms belong to it."""
    if not re.match(r"^[Uu]sage: ", block[0]):
        return [], block
    usage = [block[0].split(":", 1)[1].strip()]
    i = 1
    while i < len(block) and block[i].startswith(" "):
        if indent_of(block[i]) > len("usage: ") + 1 and usage and not block[i].lstrip().startswith(
                usage[0].split()[0] + " "):
            usage[-1] += " " + block[i].strip()
        else:
            usage.append(block[i].strip())
        i += 1
    return usage, block[i:]


def render_help(text, out, top, name):
    """One help text as roff: SYNOPSIS/DESCRIPTION/sections (top) or .SS sections (a
    subcommand). Returns the usage lines."""
    usages, description, rest = [], [], []
    blocks = list(paragraphs(text))
    # Lines before "Usage:" (core-arbiter prints its summary first) join the description.
    for i, block in enumerate(blocks):
        for j, line in enumerate(block):
            if re.match(r"^[Uu]sage: ", line):
                if j:
                    description.append(block[:j])
                usage, remainder = split_usage(block[j:])
                usages = usage
                if remainder:
                    blocks[i] = remainder
                    rest = blocks[i:]
                else:
                    rest = blocks[i + 1:]
                break
        else:
            description.append(block)
            continue
        break
    # Paragraphs up to the first heading or list are the description.
    while rest and not HEADING.match(rest[0][0]) and indent_of(rest[0][0]) == 0:
        description.append(rest.pop(0))
    out.append(".SH SYNOPSIS" if top else ".PP")
    for n, usage in enumerate(usages):
        if n:
            out.append(".br")
        # The program's name (and a subcommand's) bold, the rest filled.
        words = usage.split(" ")
        k = 1 if top else min(2, len(words))
        out.append(f"\\fB{esc(' '.join(words[:k]))}\\fR {esc(' '.join(words[k:]))}".rstrip())
    if top:
        out.append(".SH DESCRIPTION")
    for block in description:
        out.append(".PP")
        out += [esc(line.strip()) for line in block]
    after_list = False
    for block in rest:
        m = HEADING.match(block[0])
        if m:
            if top:
                out.append(f'.SH "{section_name(m.group(1))}"')
            else:
                out += [".PP", f"\\fB{esc(m.group(1))}:\\fR"]
            block = block[1:]
            after_list = False
            if not block:
                continue
        # Leading column-0 lines: text (e.g. a multi-line heading ending in ':'), then the list.
        k = 0
        while k < len(block) and indent_of(block[k]) == 0:
            k += 1
        if k:
            if after_list and top:
                out.append(".SH NOTES")
                after_list = False
            out.append(".PP")
            out += [esc(line.strip()) for line in block[:k]]
        body = block[k:]
        if body:
            if looks_like_list(body):
                render_items(body, out)
                after_list = True
            else:
                render_block(body, out)
    return usages


def run_help(command, sub):
    argv = command + ([sub] if sub else []) + ["--help"]
    env = dict(os.environ, COLUMNS="1000", LC_ALL="C.UTF-8")
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    if r.returncode != 0:
        sys.exit(f"gen-man: {' '.join(argv)} exited with {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def main():
    p = argparse.ArgumentParser(description="Writes a man page from a program's --help.")
    p.add_argument("--name", required=True)
    p.add_argument("--section", required=True)
    p.add_argument("--summary", required=True, help="the NAME line's text after the dash")
    p.add_argument("--version", required=True)
    p.add_argument("--sub", action="append", default=[], help="a subcommand to document")
    p.add_argument("--extra", help="roff appended as is")
    p.add_argument("--output", required=True)
    p.add_argument("command", nargs="+")
    o = p.parse_args()

    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
            else datetime.datetime.now(datetime.timezone.utc))
    out = [f'.\\" Generated from {o.name} --help by packaging/man/gen-man.py; do not edit.',
           f'.TH {esc(o.name.upper())} {o.section} "{when:%Y-%m-%d}" "arbrun {o.version}" '
           '"arbrun manual"',
           ".nh", ".ad l",
           ".SH NAME", f"{esc(o.name)} \\- {esc(o.summary)}"]
    render_help(run_help(o.command, None), out, True, o.name)
    if o.sub:
        out.append('.SH "SUBCOMMANDS IN DETAIL"')
        for sub in o.sub:
            out.append(f'.SS "{esc(o.name)} {esc(sub)}"')
            render_help(run_help(o.command, sub), out, False, o.name)
    if o.extra:
        with open(o.extra) as f:
            out.append(f.read().rstrip("\n"))
    tmp = o.output + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, o.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
