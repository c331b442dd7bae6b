"""`effspec check --fix`: make the edits the findings name (effspec.rules.fixes), then check again.

Safe fixes correct a spelling and keep the spec's meaning (`TFLOPS` ->
`TFLOP/s`, `claim mfu = 47` -> `47 %`); `--unsafe-fixes` adds those that change
what it declares (`peak = catalog` for another datatype's peak).  `--diff`
prints what would change and writes nothing.

A file is rewritten as `effspec fmt` rewrites one: atomically, through a
symlink the user named (the link stays a link).  A spec is fixed only if
`effspec check` reads it, so a spec found in a folder that is a symlink leading
out of the folder, or a hard link, is refused as the check refuses it; and a
file with several hard links is never replaced, even when named, as replacing
it would leave the other names with the old text.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

from effspec.cli.common import ToolError, read_as_checked, replace_text
from effspec.diagnostics import printable

MAX_ROUNDS = 10  # a fix can reveal another (a unit fixed, the claim after it parses): check again, this often


def add_flags(check) -> None:
    check.add_argument("--fix", action="store_true",
                       help="apply the safe fixes the findings name (unit spellings, `%%` on a bare MFU claim), "
                            "write the files back, and report what remains")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix, also apply the fixes that change what a spec declares "
                            "(`peak = catalog` for a sparse or another datatype's peak)")
    check.add_argument("--diff", action="store_true",
                       help="with --fix: write nothing; print a unified diff of the fixes (exit 1 if there are any)")


@dataclass
class Fixed:
    """What `--fix` did to one file: the text, the findings fixed by severity, and each fix made, described."""

    source: str
    text: str
    by_severity: Counter = field(default_factory=Counter)
    made: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)  # the unsafe fixes left in the text, described


def rechecker(path: str, folder: str | None, options: dict, selection=None):
    """The findings of a fixed text, checked as the file itself is (its path, folder, options and --select)."""
    from effspec import check_text

    def recheck(text: str):
        result = check_text(text, path, folder, **options)
        if selection is not None:
            from effspec.cli.select import apply as select

            select(result, selection)
        return result.diagnostics
    return recheck


def fix_text(text: str, path: str, folder: str | None, options: dict, selection=None, unsafe: bool = False) -> Fixed:
    """Fix ``text`` round after round until nothing is left to fix (at most MAX_ROUNDS).  Each round's fixes are
    vetted (effspec.rules.fixes.vet): a fix is made only if the text after it has no new finding."""
    from effspec import check_text
    from effspec.rules.fixes import apply, chosen, describe, vet

    out = Fixed(text, text)
    recheck = rechecker(path, folder, options, selection)
    for _ in range(MAX_ROUNDS):
        result = check_text(out.text, path, folder, **options)
        if selection is not None:
            from effspec.cli.select import apply as select

            select(result, selection)
        every = vet(result.diagnostics, out.text, recheck, result.spec)
        offers = chosen(every, unsafe)
        out.hidden = [] if unsafe else hidden_names(every, path)
        new, made = apply(out.text, [o.fix for o in offers])
        if new == out.text:
            break
        offer = {id(o.fix): o for o in offers}
        out.by_severity.update(offer[id(fix)].diag.severity for fix in made)
        out.made += [describe(offer[id(fix)], path) for fix in made]
        out.text = new
    return out


def fix_files(items: list[tuple[str, str | None]], args, selection, stdin_text: tuple[bytes, str] | None,
              stdin_root: str) -> tuple[int, FixCount]:
    """Fix every (path, root); print the diff with --diff.  (exit status so far, findings fixed by severity, and
    each fix made, described)."""
    from effspec.cli.fmt import unified_diff

    options = {"allow_hardlinks": getattr(args, "allow_hardlinks", False),
               "inline_config": False if args.no_inline_config else None, "isolated": args.isolated}
    status, total = 0, FixCount()
    for path, root in items:
        if path.endswith(".json"):  # a JSON IR is written by its producer (or `effspec export`), never edited here
            continue
        if root == stdin_root:
            if not args.diff:
                raise ToolError("--fix cannot write back to stdin (`-`): add --diff to see the fixes")
            assert stdin_text is not None
            try:
                read: tuple[str, str] | None = stdin_text[0].decode("utf-8"), stdin_text[1]
            except UnicodeDecodeError as exc:  # no check follows --diff to say EFF001
                print(f"effspec: stdin: not UTF-8 text (byte {exc.start}); not fixed", file=sys.stderr)
                status = 2
                continue
        else:
            try:
                read = read_as_checked(path, root, options["allow_hardlinks"], options["isolated"])
            except ToolError as exc:
                if args.diff:  # no check follows to say why
                    print(f"effspec: {printable(str(exc))}", file=sys.stderr)
                    status = 2
                continue
        if read is None:
            continue
        fixed = fix_text(read[0], path, read[1], options, selection, args.unsafe_fixes)
        total.hidden += fixed.hidden
        if fixed.text == fixed.source:
            continue
        total.update(fixed.by_severity)
        total.made += fixed.made
        if args.diff:
            sys.stdout.write(unified_diff(fixed.source, fixed.text, path))
            status = 1
            continue
        try:
            replace_text(path, fixed.source, fixed.text, "fixed")
        except ToolError as exc:
            print(f"effspec: {printable(str(exc))}", file=sys.stderr)
            total.subtract(fixed.by_severity)
            del total.made[len(total.made) - len(fixed.made):]
            status = 2
    out = FixCount(+total)
    out.made, out.hidden = total.made, total.hidden
    return status, out


class FixCount(Counter):
    """Findings fixed, by severity, and each fix made (`spec.eff:7:91 EFF001: Write `TFLOP/s``)."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.made: list[str] = []
        self.hidden: list[str] = []  # the unsafe fixes left, described


def _findings(counts: Counter) -> str:
    words = [f"{n} {s}{'s' if n != 1 else ''}" for s in ("error", "warning", "info") if (n := counts.get(s, 0))]
    return ", ".join(words)


def summary_lines(args, fixed: Counter | None, fixable: tuple[int, int], hidden: list[str] | None = None) -> list[str]:
    """Ruff's closing lines: what was fixed (each fix named), what --fix would fix, and the unsafe fixes left
    hidden, each named with the flag that enables it."""
    safe, unsafe = fixable if getattr(args, "format", "text") == "text" else (0, 0)  # hints for a reader only
    lines = []
    if fixed:
        lines.append(f"{'Would fix' if args.diff else 'Fixed'} {_findings(fixed)}")
        lines += [f"  {printable(made)}" for made in getattr(fixed, "made", ())]  # a file's name is anyone's
    if args.unsafe_fixes:
        safe, unsafe = safe + unsafe, 0
    if safe and not args.fix and not args.diff:
        lines.append(f"[*] {safe} fixable with --fix")
    if unsafe:
        lines.append(f"({unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with --unsafe-fixes)")
        lines += [f"  {printable(name)}" for name in hidden or ()]
    return lines


class Summary(list):
    """A file's (code, severity) pairs, how many edits `--fix` would make in it: (safe, unsafe only), and the
    unsafe ones, described."""

    fixable: tuple[int, int] = (0, 0)
    hidden: tuple[str, ...] = ()


def with_fixable(summary: list, result, recheck=None) -> Summary:
    """A file's summary (`effspec check`), with the fixes its remaining findings offer, vetted (``recheck``: the
    findings of a fixed text, as the file was checked), counted and the hidden ones named."""
    from effspec.rules.fixes import counts, vet

    out = Summary(summary)
    if result.source is None or recheck is None:
        return out
    offers = vet(result.diagnostics, result.source, recheck, result.spec)
    out.fixable = counts(offers)
    out.hidden = tuple(hidden_names(offers, result.file))
    return out


def hidden_names(offers, path: str) -> list[str]:
    """Each unsafe fix `--fix` leaves, once per place, described (`spec.eff:6:25 EFF001: Write …`)."""
    from effspec.rules.fixes import describe

    safe = {(o.fix.span, o.fix.new_text) for o in offers if o.fix.safe}
    seen: set = set()
    out = []
    for o in offers:
        place = (o.fix.span, o.fix.new_text)
        if not o.fix.safe and place not in safe and place not in seen:
            seen.add(place)
            out.append(describe(o, path))
    return out


def fix_first(args, paths, selection, stdin_text, stdin_root: str) -> tuple[int, Counter | None]:
    """`--fix`: fix the files before they are checked (the check then reports what remains); `--diff`: print the
    fixes.  (exit status so far, findings fixed by severity or None)."""
    if not (args.fix or args.diff):
        return 0, None
    status, fixed = fix_files(paths, args, selection if selection.active else None, stdin_text, stdin_root)
    if args.diff:  # no check follows: the hidden fixes are those of the fixed texts
        left = Summary()
        left.fixable, left.hidden = (0, len(fixed.hidden)), tuple(fixed.hidden)
        print_fix_summary(args, fixed, [("", left)])
    return status, fixed


def print_fix_summary(args, fixed: Counter | None, summaries) -> None:
    """`Fixed 2 errors`, `[*] 3 fixable with --fix`, the unsafe fixes left hidden: on stderr, unless --quiet."""
    safe = sum(getattr(s, "fixable", (0, 0))[0] for _, s in summaries)
    unsafe = sum(getattr(s, "fixable", (0, 0))[1] for _, s in summaries)
    hidden = [name for _, s in summaries for name in getattr(s, "hidden", ())]
    if not args.quiet:
        for line in summary_lines(args, fixed, (safe, unsafe), hidden):
            print(line, file=sys.stderr)
