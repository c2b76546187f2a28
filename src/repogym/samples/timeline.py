"""Build a sample repository's history event by event: every commit's full tree, message, people and time.

Nothing here runs git; `repogym.samples.fastimport` writes the plan. Commits
are named by keys until git gives them shas. The timeline:

1. the initial commit (tagged v0.1.0);
2. a feature and a docs change, in random order;
3. each planted bug's innocent-looking introduction, mixed with a refactor
   and a dependabot bump;
4. the fixes (single commits or merged PR branches with an issue), mixed with
   a tests-only commit, another refactor, another feature, a docs change and
   the release bot's "Bump version to 0.2.0"; the secret that one fix commit
   leaks is removed again two events later;
5. a final docs change.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterable

from repogym.samples import people
from repogym.samples.model import CommitKind, FixKind
from repogym.samples.people import Person
from repogym.samples.plan import (
    HOUR,
    Plan,
    PlannedCommit,
    PlannedFix,
    PlannedSecret,
    make_secret,
    three_way_merge,
)
from repogym.samples.prs import IssuePlan, PullPlan, SampleComment, iso
from repogym.samples.scaffold import (
    DEPENDABOT_BUMP,
    Changelog,
    SampleProject,
    generic_docs,
    initial_files,
    version_edits,
)
from repogym.samples.spec import BugSpec, Change, Edit, LibrarySpec, apply_edit, render


class Planner:
    """Builds a `Plan` event by event; main's tree and changelog are the running state."""

    def __init__(self, spec: LibrarySpec, project: SampleProject, rng: random.Random, start: int) -> None:
        self.spec, self.project, self.rng = spec, project, rng
        self.plan = Plan(project)
        self.clock = start
        self.files: dict[str, str] = {}
        self.head = ""
        self.changelog = Changelog()
        self.numbers = iter(range(1, 10_000))
        self.team = rng.sample(people.DEVELOPERS, 4)
        self.maintainer = self.team[0]
        docs = [*spec.docs, *generic_docs(project.name)]
        rng.shuffle(docs)
        self.docs_queue = docs

    # -- primitives -------------------------------------------------------
    def tick(self, low: int = 3 * HOUR, high: int = 40 * HOUR) -> int:
        self.clock += self.rng.randint(low, high)
        return self.clock

    def edited(self, files: dict[str, str], edits: Iterable[Edit], where: str) -> dict[str, str]:
        result = dict(files)
        package = self.project.package
        for edit in edits:
            path = render(edit.path, package)
            rendered = Edit(path, render(edit.old, package), render(edit.new, package))
            if path not in result and not rendered.old:
                result[path] = rendered.new.strip("\n") + "\n"  # a new file
            else:
                result[path] = apply_edit(result.get(path, ""), rendered, where)
        return result

    def commit(
        self,
        message: str,
        files: dict[str, str],
        kind: CommitKind,
        author: Person,
        *,
        committer: Person | None = None,
        ref: str = "main",
        parents: tuple[str, ...] | None = None,
        tag: str = "",
    ) -> str:
        key = f"{len(self.plan.commits)}:{kind.value}"
        if parents is None:
            parents = (self.head,) if self.head else ()
        when = self.tick()
        self.plan.commits.append(
            PlannedCommit(
                key, ref, parents, author, committer or author, when, message, dict(files), kind, tag
            )
        )
        if ref == "main":
            self.head, self.files = key, dict(files)
        return key

    def change(self, change: Change, kind: CommitKind, author: Person | None = None) -> str:
        files = self.edited(self.files, change.edits, change.message)
        if change.changelog:
            self.changelog.unreleased.append(change.changelog)
            files["CHANGELOG.md"] = self.changelog.render()
        return self.commit(change.message, files, kind, author or self.rng.choice(self.team))

    def docs(self) -> str | None:
        if not self.docs_queue:
            return None
        return self.change(self.docs_queue.pop(0), CommitKind.DOCS)

    # -- events -----------------------------------------------------------
    def initial(self) -> None:
        self.changelog.releases.append(("0.1.0", iso(self.clock)[:10], ["First release."]))
        files = initial_files(self.spec, self.project, self.changelog)
        self.commit("Initial commit", files, CommitKind.INITIAL, self.maintainer, tag="v0.1.0")

    def introduce(self, fix: PlannedFix) -> None:
        bug = fix.bug
        files = self.edited(self.files, [Edit(bug.path, bug.good, bug.bad)], bug.slug)
        fix.bug_key = self.commit(bug.intro_message, files, CommitKind.BUG, self.rng.choice(self.team))

    def dependabot(self) -> None:
        package, old, new = DEPENDABOT_BUMP
        edit = Edit("requirements-dev.txt", f"{package}=={old}", f"{package}=={new}")
        message = (
            f"Bump {package} from {old} to {new}\n\n"
            f"Bumps [{package}](https://github.com/pytest-dev/{package}) from {old} to {new}.\n\n"
            f"---\nupdated-dependencies:\n- dependency-name: {package}\n"
            "  dependency-type: direct:development\n  update-type: version-update:semver-major\n...\n\n"
            "Signed-off-by: dependabot[bot] <support@github.com>"
        )
        files = self.edited(self.files, [edit], "dependabot")
        self.commit(message, files, CommitKind.BOT, people.DEPENDABOT, committer=people.GITHUB)

    def release(self, old: str = "0.1.0", new: str = "0.2.0") -> None:
        files = self.edited(self.files, version_edits(self.project.package, old, new), "release")
        self.changelog.release(new, iso(self.clock)[:10])
        files["CHANGELOG.md"] = self.changelog.render()
        self.commit(f"Bump version to {new}", files, CommitKind.BOT, people.ACTIONS_BOT, tag=f"v{new}")

    def remove_secret(self, secret: PlannedSecret) -> None:
        old = "\n\n\n" + secret.block + "\n"
        files = self.edited(self.files, [Edit(secret.path, old, "\n")], "secret removal")
        message = (
            "Remove hard-coded upload credentials\n\nThey were committed by mistake and have been revoked."
        )
        secret.removed_key = self.commit(message, files, CommitKind.SECRET_REMOVAL, self.maintainer)

    def fix_edits(self, bug: BugSpec, with_test: bool = True) -> list[Edit]:
        edits = [Edit(bug.path, bug.bad, bug.fixed_code)]
        if with_test:
            edits.append(Edit(bug.test_path, "", bug.regression_test))
        return edits

    def fix_commit(self, fix: PlannedFix, secret: PlannedSecret | None) -> None:
        bug = fix.bug
        files = self.edited(self.files, self.fix_edits(bug), bug.slug)
        if secret is not None:
            files = self.edited(files, [Edit(secret.path, "", secret.block)], "secret")
            fix.contains_secret = True
        self.changelog.unreleased.append(bug.fix_title + ".")
        files["CHANGELOG.md"] = self.changelog.render()
        fix.base_key = self.head
        fix.fix_key = self.commit(
            f"{bug.fix_title}\n\n{bug.fix_body}", files, CommitKind.FIX, self.rng.choice(self.team)
        )
        if secret is not None:
            secret.added_key = fix.fix_key

    def fix_pr(self, fix: PlannedFix) -> None:
        """An issue, a branch with the fix, a docs commit on main meanwhile, then a merge commit."""
        bug = fix.bug
        fix.issue_number = self.issue(bug)
        fix.pr_number = next(self.numbers)
        fixer, branch, fork_files = self.rng.choice(self.team[1:]), f"fix-{bug.slug}", dict(self.files)
        tip, branch_files = self.pr_branch(fix, fixer, branch)
        opened = self.plan.commit(tip).when + self.rng.randint(300, HOUR)
        self.docs()  # main moves on while the PR is open
        merged = three_way_merge(fork_files, self.files, branch_files, branch)
        self.changelog.unreleased.append(bug.fix_title + ".")
        fix.base_key = self.head
        message = f"Merge pull request #{fix.pr_number} from {fixer.login}/{branch}\n\n{bug.fix_title}"
        fix.fix_key = self.commit(
            message,
            merged,
            CommitKind.FIX,
            self.maintainer,
            committer=people.GITHUB,
            parents=(self.head, tip),
        )
        self.record_pull(fix, fixer.login, branch, opened)

    def pr_branch(self, fix: PlannedFix, fixer: Person, branch: str) -> tuple[str, dict[str, str]]:
        """Commit the fix on a branch from main's head, half the time after a commit with the failing test."""
        bug = fix.bug
        tip, files, keys = self.head, dict(self.files), []
        if self.rng.random() < 0.5:
            files = self.edited(files, [Edit(bug.test_path, "", bug.regression_test)], bug.slug)
            message = f"Add a failing test for #{fix.issue_number}"
            tip = self.commit(message, files, CommitKind.PR_BRANCH, fixer, ref=branch, parents=(tip,))
            keys.append(tip)
        files = self.edited(files, self.fix_edits(bug, with_test=not keys), bug.slug)
        files["CHANGELOG.md"] = self.changelog.render(extra=(bug.fix_title + ".",))
        tip = self.commit(bug.fix_title, files, CommitKind.PR_BRANCH, fixer, ref=branch, parents=(tip,))
        fix.branch_keys = (*keys, tip)
        return tip, files

    def record_pull(self, fix: PlannedFix, login: str, branch: str, opened: int) -> None:
        """The pull in the export, and its issue closed by the maintainer right after the merge."""
        assert fix.pr_number is not None and fix.issue_number is not None
        merged_at = self.plan.commit(fix.fix_key).when
        review_time = merged_at - self.rng.randint(600, 3 * HOUR)
        self.plan.pulls.append(
            PullPlan(
                number=fix.pr_number,
                title=fix.bug.fix_title,
                body=f"{fix.bug.fix_body}\n\nFixes #{fix.issue_number}",
                login=login,
                branch=branch,
                opened=opened,
                merged=merged_at,
                head_key=fix.branch_keys[-1],
                base_key=fix.base_key,
                merge_key=fix.fix_key,
                comments=(SampleComment(self.maintainer.login, "Thanks! Looks good to me.", review_time),),
            )
        )
        self.close_issue(fix.issue_number, merged_at, f"Fixed in #{fix.pr_number}.")
        self.plan.branches.append(branch)

    def issue(self, bug: BugSpec) -> int:
        number = next(self.numbers)
        opened = self.tick(HOUR, 10 * HOUR)
        reporter = self.rng.choice(people.REPORTERS)
        commenters = [self.maintainer.login, self.rng.choice(self.team[1:]).login]
        comments = []
        for index, hint in enumerate(bug.hints):
            comments.append(
                SampleComment(
                    commenters[index % 2], render(hint, self.project.package), self.tick(HOUR, 8 * HOUR)
                )
            )
        body = render(bug.issue_body, self.project.package)
        self.plan.issues.append(
            IssuePlan(number, bug.issue_title, body, reporter, opened, None, ("bug",), tuple(comments))
        )
        return number

    def close_issue(self, number: int, when: int, note: str) -> None:
        closing = SampleComment(self.maintainer.login, note, when + 60)
        self.plan.issues = [
            dataclasses.replace(issue, closed=when + 60, comments=(*issue.comments, closing))
            if issue.number == number
            else issue
            for issue in self.plan.issues
        ]

    def question(self) -> None:
        """An open issue that no commit resolves (a question), as real trackers have."""
        number = next(self.numbers)
        opened = self.tick(HOUR, 5 * HOUR)
        answer = SampleComment(
            self.maintainer.login, "Yes: CI runs the tests on 3.8 to 3.12.", opened + 5 * HOUR
        )
        body = f"Is {self.project.name} tested on Python 3.12? The README does not say."
        self.plan.issues.append(
            IssuePlan(
                number,
                "Python 3.12 support?",
                body,
                self.rng.choice(people.REPORTERS),
                opened,
                None,
                ("question",),
                (answer,),
            )
        )


def plan_history(
    spec: LibrarySpec,
    project: SampleProject,
    rng: random.Random,
    bugs: list[BugSpec],
    kinds: list[FixKind],
    start: int,
) -> Plan:
    """The whole history of one repository (see the module docstring for its shape)."""
    planner = Planner(spec, project, rng, start)
    plan = planner.plan
    plan.fixes = [PlannedFix(bug, kind, "") for bug, kind in zip(bugs, kinds, strict=True)]
    secret_fix = next(fix for fix in plan.fixes if fix.kind == FixKind.COMMIT)
    plan.secret = make_secret(rng, render(secret_fix.bug.path, project.package))

    planner.initial()
    run_shuffled(rng, [lambda: planner.change(spec.features[0], CommitKind.FEATURE), planner.docs])
    run_shuffled(
        rng,
        [
            *(bound(planner.introduce, fix) for fix in plan.fixes),
            planner.dependabot,
            lambda: planner.change(spec.refactors[0], CommitKind.REFACTOR),
            planner.question,
        ],
    )
    fillers: list[Callable[[], object]] = [
        lambda: planner.change(spec.tests_only[0], CommitKind.TESTS),
        lambda: planner.change(spec.refactors[1], CommitKind.REFACTOR),
        lambda: planner.change(spec.features[1], CommitKind.FEATURE),
        planner.release,
        planner.docs,
    ]
    rng.shuffle(fillers)
    for fix in plan.fixes:
        if fix.kind == FixKind.PR:
            planner.fix_pr(fix)
        else:
            planner.fix_commit(fix, plan.secret if fix is secret_fix else None)
        if fix is secret_fix:
            for _ in range(min(2, len(fillers))):
                fillers.pop(0)()
            planner.remove_secret(plan.secret)
        elif fillers:
            fillers.pop(0)()
    for filler in fillers:
        filler()
    planner.docs()
    return plan


def bound(function: Callable[[PlannedFix], None], fix: PlannedFix) -> Callable[[], None]:
    return lambda: function(fix)


def run_shuffled(rng: random.Random, events: list[Callable[[], object]]) -> None:
    rng.shuffle(events)
    for event in events:
        event()
