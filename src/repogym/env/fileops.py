"""The file tools of RepoEnv, run inside the sandbox: `python3 -I fileops.py ARGS.json RESULT.json`.

This file is copied into each episode's read-only inbox and run by the jail's Python (3.6 or
newer, standard library only) with the repository as the working directory. ARGS.json holds
`{"op": ..., ...}` (written by the host, so model text never reaches a shell command line);
RESULT.json receives `{"ok": bool, "text": str}`. Every path is resolved, symlinks included,
and must stay inside the repository and outside `.git`. Text is read and written as UTF-8;
binary files and, for edits, undecodable text are refused rather than corrupted.
"""

import json
import os
import re
import sys

BINARY_SNIFF_BYTES = 8192
SKIP_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".tox", "node_modules"})
SNIPPET_CONTEXT = 3


class ToolError(Exception):
    """A tool call that cannot be carried out; its message is shown to the agent."""


def split_lines(text):
    """Lines split on newlines only (as git and editors count them), each keeping its newline."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def resolve(args, key="path", must_exist=True):
    """(absolute path, path relative to the repository) of args[key], or ToolError."""
    rel = args.get(key)
    alias = args.get("repo_alias") or "/testbed"
    root = os.path.realpath(os.getcwd())
    if rel == alias:
        rel = "."
    elif rel.startswith(alias + "/"):
        rel = rel[len(alias) + 1 :]
    if not rel.strip():
        raise ToolError("the path is empty; give a path relative to the repository root, e.g. 'src/app.py'")
    if "\x00" in rel:
        raise ToolError("the path contains a NUL character")
    full = os.path.realpath(os.path.join(root, rel))
    if full != root and not full.startswith(root + os.sep):
        via = " (through a symbolic link)" if not os.path.isabs(rel) and ".." not in rel.split("/") else ""
        raise ToolError(f"{rel!r} is outside the repository{via}; tools only reach files under {alias}")
    inner = os.path.relpath(full, root)
    if ".git" in inner.split(os.sep):
        raise ToolError(f"{rel!r} is inside .git, which the tools do not touch; use bash for git")
    if must_exist and not os.path.exists(full):
        raise ToolError(f"{rel!r}: no such file or directory")
    return full, inner


def read_text(full, inner, args, for_edit):
    """(text, note) of a file; ToolError for folders, huge or binary files, and undecodable edits."""
    if os.path.isdir(full):
        raise ToolError(f"{inner} is a directory")
    size = os.path.getsize(full)
    limit = int(args.get("max_file_bytes") or 4 * 1024 * 1024)
    if size > limit:
        raise ToolError(
            f"{inner} is {size} bytes, over the tools' limit of {limit}; use bash (head, sed -n) for parts of it"
        )
    with open(full, "rb") as handle:
        data = handle.read()
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise ToolError(f"{inner} is a binary file ({size} bytes); the file tools handle text only")
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        if for_edit:
            raise ToolError(
                f"{inner} is not UTF-8 text (byte {exc.start} is invalid); editing it here would corrupt it: use bash"
            ) from None
        return data.decode(
            "utf-8", "replace"
        ), "note: not valid UTF-8; undecodable bytes are shown as U+FFFD\n"


def write_text(full, text):
    with open(full, "wb") as handle:
        handle.write(text.encode("utf-8", "surrogateescape"))


def numbered(lines, start, end):
    """Lines start..end (1-based, inclusive) with their numbers, as view_file shows them."""
    shown = []
    for number in range(start, end + 1):
        shown.append("{:>6}\t{}\n".format(number, lines[number - 1].rstrip("\r\n")))
    return "".join(shown)


def op_view(args):
    full, inner = resolve(args)
    if os.path.isdir(full):
        return list_dir(full, inner)
    text, note = read_text(full, inner, args, for_edit=False)
    lines = split_lines(text)
    total = len(lines)
    if total == 0:
        return f"{inner} is empty (0 lines)\n"
    start = args.get("start") or 1
    end = args.get("end")
    if start > total:
        raise ToolError(
            "line range {}:{} is beyond the end of {} ({} lines)".format(start, end or "", inner, total)
        )
    clamped = ""
    if end is None or end > total:
        if end is not None:
            clamped = f" (the file ends at line {total})"
        end = total
    header = f"{inner} lines {start}-{end} of {total}{clamped}\n"
    return note + header + numbered(lines, start, end)


def list_dir(full, inner):
    entries = []
    for name in sorted(os.listdir(full)):
        if name == ".git":
            continue
        entries.append(name + "/" if os.path.isdir(os.path.join(full, name)) else name)
    label = "." if inner == "." else inner
    return "{} is a directory with {} entries:\n{}".format(
        label, len(entries), "".join(e + "\n" for e in entries)
    )


def iter_files(full):
    if os.path.isfile(full):
        yield full
        return
    for root, dirs, files in os.walk(full):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            path = os.path.join(root, name)
            if not os.path.islink(path):
                yield path


def op_search(args):
    full, inner = resolve(args)
    pattern = args["pattern"]
    note = ""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        regex = re.compile(re.escape(pattern))
        note = f"note: {pattern!r} is not a valid regular expression ({exc}); searched for the literal text\n"
    max_matches = int(args.get("max_matches") or 100)
    root = os.path.realpath(os.getcwd())
    shown, total, files = [], 0, 0
    for path in iter_files(full):
        try:
            if os.path.getsize(path) > 2 * 1024 * 1024:
                continue
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        if b"\x00" in data[:BINARY_SNIFF_BYTES]:
            continue
        found = False
        for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), start=1):
            if regex.search(line):
                total += 1
                found = True
                if len(shown) < max_matches:
                    text = line.rstrip("\r")
                    text = text if len(text) <= 200 else text[:200] + "..."
                    shown.append(f"{os.path.relpath(path, root)}:{number}: {text}\n")
        files += found
    where = "the repository" if inner == "." else inner
    if not total:
        return note + f"No matches for {pattern!r} in {where}\n"
    more = f" (showing the first {max_matches})" if total > max_matches else ""
    header = f"{total} matches for {pattern!r} in {files} file(s) under {where}{more}:\n"
    return note + header + "".join(shown)


def snippet(lines, first, last):
    """The edited region first..last with a few lines around it."""
    if not lines:
        return "(the file is now empty)\n"
    start = max(1, first - SNIPPET_CONTEXT)
    end = min(len(lines), max(last, first) + SNIPPET_CONTEXT)
    return numbered(lines, start, end)


def op_edit(args):
    full, inner = resolve(args)
    text, _ = read_text(full, inner, args, for_edit=True)
    lines = split_lines(text)
    total = len(lines)
    start, end = args["start"], args["end"]
    if start > total + 1 or end > total:
        raise ToolError(
            f"line range {start}:{end} is beyond the end of {inner} ({total} lines); to append, use lines '{total + 1}:{total}'"
        )
    if end < start - 1:
        raise ToolError(f"line range {start}:{end} ends before it starts")
    eol = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    new = args["text"].replace("\r\n", "\n")
    if eol != "\n":
        new = new.replace("\n", eol)
    through_end_without_newline = end == total and total and not lines[-1].endswith("\n")
    if new and not new.endswith("\n") and not through_end_without_newline:
        new += eol
    if start == total + 1 and total and not lines[-1].endswith("\n"):
        lines[-1] += eol
    new_lines = split_lines(new)
    result = lines[: start - 1] + new_lines + lines[end:]
    write_text(full, "".join(result))
    if end < start:
        what = f"inserted {len(new_lines)} line(s) before line {start}"
    else:
        what = f"replaced lines {start}-{end} with {len(new_lines)} line(s)"
    summary = f"Edited {inner}: {what}; it now has {len(result)} lines.\n"
    return summary + snippet(result, start, start + len(new_lines) - 1)


def op_replace(args):
    full, inner = resolve(args)
    text, _ = read_text(full, inner, args, for_edit=True)
    old, new = args["old"], args["new"]
    if not old:
        raise ToolError("'old' is empty; use edit_file to insert lines or create_file for a new file")
    if old == new:
        raise ToolError("'old' and 'new' are identical: nothing would change")
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ToolError(
            f"'old' does not occur in {inner}; view_file it and copy the text exactly (indentation counts)"
        )
    if count > 1:
        at, offset = [], 0
        for _ in range(min(count, 5)):
            offset = text.index(old, offset)
            at.append(str(text.count("\n", 0, offset) + 1))
            offset += 1
        raise ToolError(
            "'old' occurs {} times in {} (starting at lines {}); include more surrounding lines so it occurs "
            "once".format(count, inner, ", ".join(at))
        )
    offset = text.index(old)
    result = text[:offset] + new + text[offset + len(old) :]
    write_text(full, result)
    first = text.count("\n", 0, offset) + 1
    last = first + new.count("\n")
    return f"Edited {inner}: replaced 1 occurrence.\n" + snippet(split_lines(result), first, last)


def op_create(args):
    full, inner = resolve(args, must_exist=False)
    if os.path.isdir(full):
        raise ToolError(f"{inner} is a directory")
    existed = os.path.exists(full)
    parent = os.path.dirname(full)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    write_text(full, args["text"])
    lines = len(split_lines(args["text"]))
    return "{} {} ({} lines).\n".format("Replaced" if existed else "Created", inner, lines)


OPS = {"view": op_view, "search": op_search, "edit": op_edit, "replace": op_replace, "create": op_create}


def main(argv):
    with open(argv[1], encoding="utf-8") as handle:
        args = json.load(handle)
    try:
        result = {"ok": True, "text": OPS[args["op"]](args)}
    except ToolError as exc:
        result = {"ok": False, "text": str(exc)}
    except OSError as exc:
        result = {"ok": False, "text": "{}: {}".format(exc.strerror or exc, args.get("path", ""))}
    except UnicodeError as exc:
        result = {"ok": False, "text": f"the text cannot be written as UTF-8: {exc}"}
    with open(argv[2], "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
