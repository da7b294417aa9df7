"""Write ``datasets/relnotes/relnotes.jsonl`` from the hand-written questions below.

Each question was written by hand, the way a user asks, after reading the entry that
answers it; ``evidence`` is a phrase of that entry (grade 2: the file holds the entry) and
``mentions`` phrases of files that refer to it less directly (grade 1).  A file is labelled
with a grade when its text, whitespace collapsed and case folded, contains the phrase, so
every file that repeats the entry (git's maintenance notes and the next feature release
both list a fix) is found, not only the one the question was written from.  Labels name
files by path suffix (``git/RelNotes/2.23.0.txt``, ``gzip/NEWS``): datasets/relnotes/SOURCE.md.

The split is fixed by a rule chosen before any system output was seen: a question is
``train`` when the sha256 of its id is even, else ``test``.

    .venv/bin/python scripts/relnotes_labels.py            # writes the JSONL, prints the labels
    .venv/bin/python scripts/relnotes_labels.py --check    # fails if the JSONL differs
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "datasets" / "relnotes" / "relnotes.jsonl"
MANIFEST = REPO / "datasets" / "relnotes" / "manifest.json"

# (id, query, category, evidence phrases -> grade 2, mention phrases -> grade 1)
Q = [
    # --- git release notes -------------------------------------------------------------
    ("rn01", "which git version introduced git switch and git restore", "added",
     ['two new commands "git switch" and "git restore" are introduced'], []),
    ("rn02", "how do I stash only the changes I already staged", "added",
     ['"git stash" learned the "--staged" option'], []),
    ("rn03", "make git blame skip commits that only reformatted the code", "added",
     ['"git blame" learned to "ignore" commits in the history'], []),
    ("rn04", "is there a conflict style that shows less redundant context than diff3", "added",
     ['"zealous diff3" style of merge conflict presentation has been added'], []),
    ("rn05", "when did git push switch to the simple mode by default", "default",
     ['the "simple" mode is the default for "git push"'],
     ['backward compatibility notes (for git 2.0', 'will change in the upcoming git 2.0 release',
      'git 2.0 was supposed to make the "simple" mode for the default of "git push"']),
    ("rn06", "since which version do git diff and git log detect renames without -M", "default",
     ['by default enable the rename detection'],
     ['with git 2.9 and later, it is enabled by default']),
    ("rn07", "git merge fails with refusing to merge unrelated histories, how do I override it", "default",
     ['escape hatch "--allow-unrelated-histories" option'],
     ['"git subtree" has been taught to use the "--allow-unrelated-histories" option']),
    ("rn08", "keep git hooks in a directory tracked in the repository instead of .git/hooks", "added",
     ['a new configuration variable core.hooksPath allows customizing where the hook directory is'],
     ['learned to take core.hooksPath configuration variable (introduced during 2.9 cycle)']),
    ("rn09", "use a different email in my git config for repositories under a work folder", "added",
     ['the configuration file learned a new "includeif.<condition>.path"'],
     ['the "[includeif "gitdir:$dir"] path=..." mechanism introduced in 2.13.0',
      'the conditional inclusion mechanism learned to base the choice on the branch the head',
      'using "[includeif <condition>]" learns to base its decision on the url of the remote']),
    ("rn10", "interactive rebase action that squashes a commit but throws away its message", "added",
     ['"git rebase -i" learned new action "fixup"'],
     ['"git rebase -i" also learned --autosquash option that is useful together with the new "fixup" action']),
    ("rn11", "delete a branch on the remote with git push", "added",
     ['"git push" learned "git push origin --delete branch"'], []),
    ("rn12", "git says unsafe repository owned by someone else: which releases added that check", "security",
     ['this release addresses the security issue cve-2022-24765',
      'to address the security issue cve-2022-24765',
      'addresses the security issue cve-2022-24765'],
     ['which was made to address cve-2022-24765', 'with the fixes for cve-2022-24765',
      'tighten ownership checks post cve-2022-24765']),
    ("rn13", "when was wire protocol version 2 made the default for fetch", "default",
     ['the transport protocol version 2 becomes the default one'],
     ['which was promoted to the default in git 2.26 release']),
    ("rn14", "can git maintenance schedule its jobs with systemd timers", "added",
     ['"git maintenance" scheduler learned to use systemd timers'], []),
    ("rn15", "which release added git maintenance as a successor to git gc", "added",
     ['"git maintenance", a "git gc"\'s big brother, has been introduced'],
     ['"git maintenance", an extended big brother of "git gc", continues to evolve']),
    ("rn16", "can git be built to use nettle for SHA-256", "added",
     ['support for libnettle as sha256 implementation has been added'], []),
    ("rn17", "does git status tell me that I am in a sparse checkout", "added",
     ['"git status" learned to report the status of sparse checkout'], []),
    ("rn18", "why is fsmonitor turned off for my repository on a network share", "default",
     ['use of fsmonitor on a repository on networked filesystem is disabled'], []),
    ("rn19", "group git shortlog output by a custom format string", "added",
     ['"git shortlog" learned to group by the "format" string'], []),
    ("rn20", "clone with submodules checked out at the tip of their remote branch rather than the recorded commit", "added",
     ['by passing the new "--remote-submodules" option'], []),
    ("rn21", "hunk headers show the Rust function name in git diff", "added",
     ['boundary for rust has been added'], []),
    ("rn22", "skip the current commit when a cherry-pick stops on a conflict", "added",
     ['"git cherry-pick/revert" learned a new "--skip" action'], []),
    ("rn23", "git am stops on an email that contains no patch, can it drop it instead", "added",
     ['"git am" learns "--empty=(stop|drop|keep)" option'], []),
    ("rn24", "configure git to GPG-sign every commit without passing -S", "added",
     ['"git commit" can be told to always gpg sign the resulting commit'], []),
    ("rn25", "sign git tags and commits with X.509 certificates instead of OpenPGP", "added",
     ['gpg.format that can be set to "openpgp" or "x509"'], []),
    ("rn26", "when did git grep stop calling the external grep program", "default",
     ['"git grep" does not rely on external grep anymore'], []),
    ("rn27", "compact short format for git status output", "added",
     ['"git status" learned "-s(hort)" output format'], []),
    ("rn28", "make git pull refuse anything that is not a fast-forward", "added",
     ['"git pull" can be told to only accept fast-forward'], []),
    ("rn29", "stash only some of the files I changed", "added",
     ['"git stash push" takes a pathspec'], ['enhancement to "git stash push" command to support pathspec']),
    ("rn30", "add a Signed-off-by line to every commit while rebasing", "added",
     ['"git rebase" learns "--signoff" option'], []),
    ("rn31", "trailing spaces in .gitignore patterns", "default",
     ['trailing whitespaces in .gitignore files, unless they are quoted'], []),
    ("rn32", "what changed for git add -u without a path in git 2.0", "default",
     ['"git add -u" and "git add -a", when run without any pathspec, is a tree-wide operation',
      'when "git add -u" and "git add -a" are run inside a subdirectory without specifying which paths'],
     ['when "git add -u" and "git add -a" that does not specify what paths to add on the command line',
      'when "git add -u" (and "git add -a") is run inside a subdirectory and does not specify which paths']),
    ("rn33", "lock a new worktree right away when creating it", "added",
     ['"git worktree add --lock" allows to lock a worktree immediately'], []),
    ("rn34", "pass an option such as -X ours to the merge strategy", "added",
     ['"git merge" learned to pass options specific to strategy-backends'], []),
    ("rn35", "reachability bitmaps from JGit to speed up clone and fetch serving", "added",
     ['the bitmap-index feature from jgit has been ported'], []),
    ("rn36", "stop git status from counting commits ahead and behind the upstream", "added",
     ['with a new configuration variable status.aheadbehind'], []),
    ("rn37", "is there a fix for the merge-ort bug with directory renames", "fix",
     ['fixes a long-standing corner case bug around directory renames in the merge-ort strategy'], []),
    ("rn38", "git log --format padding integer overflow vulnerability", "security",
     ['cve-2022-41903: git log has the ability to display commits using an arbitrary format',
      'fixes cve-2022-23521 and cve-2022-41903'],
     ['merges the security fix that appears in v2.30.7']),
    ("rn39", "recursive clone could run a hook from a malicious submodule (CVE-2024-32002)", "security",
     ['this addresses the security issues cve-2024-32002', 'cve-2024-32002:', 'cve-2024-32002, cve-2024-32004'],
     []),
    ("rn40", "where is the credential cache daemon socket stored by default now", "default",
     ['the default location "~/.git-credential-cache/socket" for the socket'], []),
    # --- other packages' NEWS and changelogs ---------------------------------------------
    ("rn41", "gzip -l shows the wrong uncompressed size for files bigger than 4GB", "fix",
     ["'gzip -l' no longer misreports file lengths 4 gib and larger",
      'report correct length of 4 gib and larger files'], []),
    ("rn42", "zgrep file name with newlines can overwrite arbitrary files", "security",
     ['zgrep applied to a crafted file name with two or more newlines',
      'zgrep: fix arbitrary-file-write vulnerability'],
     ['fixed arbitrary command injection via a malicious filename (cve-2022-1271']),
    ("rn43", "does cp have an option to never use reflinks", "added",
     ['cp --reflink now supports --reflink=never'], []),
    ("rn44", "ls option to print clickable file links in the terminal", "added",
     ['ls supports a new --hyperlink[=when] option'], []),
    ("rn45", "debug option in sed that shows what the script does", "added",
     ['new option, --debug: print the input sed script in canonical form'], []),
    ("rn46", "why does egrep print a warning now", "default",
     ['now warn that they are obsolescent and should be replaced by grep -e and grep -f'], []),
    ("rn47", "does grep -P use PCRE2", "default",
     ['the -p option is now based on pcre2 instead of the older pcre'], []),
    ("rn48", "which tar version can compress with zstd", "added",
     ["new option '--zstd' instructs tar to use zstd as compression program"], []),
    ("rn49", "make rule that builds several output files with one recipe run", "added",
     ['replace the ":" token with "&:" in the rule'], []),
    ("rn50", "bash option to close file descriptors opened with the {var} redirection", "added",
     ["the new `varredir_close' shell option"], []),
    ("rn51", "ampersand in the replacement of ${var//pattern/string} in bash 5.2", "default",
     ['new shell option: patsub_replacement'], []),
    ("rn52", "scroll in less with the mouse wheel", "added",
     ['add --mouse option'], []),
    ("rn53", "xz BCJ filter for ARM64 executables", "added",
     ['the arm64 filter is now stable'], []),
    ("rn54", "strace shows (deleted) after the path of a removed file descriptor in a different place now", "default",
     ['the "(deleted)" marker for unlinked paths of file descriptors is now printed outside angle brackets'], []),
    ("rn55", "does wget support TLS 1.3", "added",
     ['wget now has support for tlsv1.3', 'add option to select tls 1.3 on the command line'], []),
    ("rn56", "zstd make a patch from an old file to a new one", "added",
     ['new --patch-from command, create and apply patches from files'], []),
    ("rn57", "which jedi release dropped Python 3.8", "removed",
     ['removed support for python 3.8 and 3.9'], []),
    ("rn58", "parso grammar for Python 3.14", "added",
     ['add a fallback grammar for python 3.14+'], []),
    ("rn59", "man-db reading zstd compressed man pages", "added",
     ['add support for `zstd`-compressed manual pages'], []),
    ("rn60", "apt methods sandboxed with seccomp", "added",
     ['now use seccomp-bpf sandboxing to restrict the list of allowed system calls'], []),
    ("rn61", "unbounded memory growth with TLS 1.3 sessions in OpenSSL", "security",
     ['fixed unbounded memory growth with session handling in tlsv1.3',
      'cve-2024-2511 (unbounded memory growth with session handling in tlsv1.3)'], []),
    ("rn62", "when did the GZIP environment variable become obsolescent", "removed",
     ['the gzip environment variable is now obsolescent'], []),
    ("rn63", "less option to search incrementally as I type", "added",
     ['add the --incsearch option'], []),
    ("rn64", "diff colored output that works with less -R", "fix",
     ['diff --color now produces output compatible with less -r'], []),
    ("rn65", "bash crashes on startup when LC_ALL is set to a locale that does not exist", "fix",
     ['starting bash with an invalid locale specification for lc_all/lang/lc_ctype can cause the shell to crash'], []),
    ("rn66", "is the Debian curl package built with zstd support", "added",
     ['compile with zstd support (closes: #983660)'], []),
    ("rn67", "split --number=K/N writes the wrong chunk to stdout", "fix",
     ['split --number=k/n will again correctly split chunk k of n to stdout', 'split --number=k/n fixed'], []),
    ("rn68", "does lesspipe open zstd compressed files", "added",
     ['lesspipe: support zstd-compressed files'], ['debian/lesspipe.1: list zstd related file types']),
]


def corpus() -> dict[str, str]:
    """label -> text (whitespace collapsed, case folded) of every manifest file."""
    out = {}
    for e in json.loads(MANIFEST.read_text())["entries"]:
        src = Path(e["source"])
        data = src.read_bytes()
        if src.suffix == ".gz":
            data = gzip.decompress(data)
        if hashlib.sha256(data).hexdigest() != e["sha256"]:
            sys.exit(f"{src}: content differs from the manifest")
        out[e["label"]] = " ".join(data.decode("utf-8", "replace").split()).casefold()
    return out


def split_of(qid: str) -> str:
    return "train" if int(hashlib.sha256(qid.encode()).hexdigest(), 16) % 2 == 0 else "test"


def build() -> list[dict[str, object]]:
    texts = corpus()
    rows = []
    ids = set()
    for qid, query, category, evidence, mentions in Q:
        assert qid not in ids, qid
        ids.add(qid)
        rel: dict[str, int] = {}
        for grade, phrases in ((1, mentions), (2, evidence)):
            for phrase in phrases:
                hits = [lab for lab, t in texts.items() if " ".join(phrase.split()).casefold() in t]
                if not hits:
                    sys.exit(f"{qid}: no file contains {phrase!r}")
                for lab in hits:
                    rel[lab] = max(rel.get(lab, 0), grade)
        rows.append({"id": qid, "query": query, "relevant": dict(sorted(rel.items())), "category": category,
                     "split": split_of(qid)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in build())
    if args.check:
        if OUT.read_text() != text:
            sys.exit(f"{OUT} differs from what the questions give")
        print("ok")
        return
    OUT.write_text(text)
    for line in text.splitlines():
        r = json.loads(line)
        print(r["id"], r["split"], r["category"], r["query"], "->", r["relevant"])


if __name__ == "__main__":
    main()
