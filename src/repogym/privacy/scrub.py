"""Scrub a batch of tasks: secrets dropped or redacted, personal data redacted, licences gated.

What a kept task looks like:
- no secret detect-secrets finds, anywhere in the task (patch, test_patch,
  problem_statement, hints_text, env, metadata, extra); a value found in one
  task is also searched for, verbatim, in every other task of the batch;
- personal data (see `repogym.privacy.pii`) replaced by `<REDACTED:kind>` in
  the text fields, metadata and Python comments on added patch lines;
- `license` set to the repository's SPDX id at the task's base commit, from
  an allowed licence;
- `metadata["privacy"]` saying what was redacted, and whether a patch changed
  (validate such a task again: a test may have depended on the redacted value).

Policy 'redact' rewrites only what can be rewritten without changing what
the patch applies to: added lines of a patch and free text. A secret on a
context or removed line, in a file header or in env commands cannot be
removed without breaking the task, so that task is dropped under either
policy. After a redaction the patch is checked with `git apply --check` at
the base commit when the repository is at hand; one that no longer applies
is dropped too, since a task whose gold patch fails to apply is worse than
no task.
"""

from __future__ import annotations

import difflib
import enum
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from repogym.privacy.gitread import applies_at
from repogym.privacy.licenses import LicenseDetector, LicenseInfo
from repogym.privacy.patchlines import PatchLine, classify_patch_lines
from repogym.privacy.pii import PiiHit, PiiKind, redact_pii, redact_pii_in_patch_comments
from repogym.privacy.results import DropCode, DroppedTask, DropReason, Finding, ScrubResult
from repogym.privacy.scanpool import ScanField, scan_batch
from repogym.privacy.secrets import SecretHit, find_known, prefer_type, redact
from repogym.privacy.spdx import DEFAULT_ALLOWLIST, KNOWN_IDS, disallowed_ids
from repogym.task import Task

PATCH_FIELDS = ("patch", "test_patch")
TEXT_FIELDS = ("problem_statement", "hints_text")


class SecretPolicy(enum.StrEnum):
    """What happens to a task that contains a secret."""

    DROP = "drop"
    """The task is left out and listed in the report."""
    REDACT = "redact"
    """Each secret is replaced by <REDACTED:type> where that keeps the task working; otherwise the task is dropped."""


class ScrubConfig(BaseModel):
    """Options of the privacy stage (`repogym scrub`, and `repogym validate` by default)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    policy: SecretPolicy = SecretPolicy.DROP
    """'drop': a task with any secret is left out. 'redact': secrets are replaced by markers where the patch still applies, else the task is left out."""
    license_allowlist: tuple[str, ...] = DEFAULT_ALLOWLIST
    """SPDX ids a repository may be licensed under; an id also admits its -only / -or-later variants."""
    allow_unknown_license: bool = False
    """Keep tasks whose licence cannot be told (no repo_source, no licence file, unrecognised text); refused by default."""
    pii: tuple[PiiKind, ...] = (PiiKind.EMAIL, PiiKind.PHONE, PiiKind.IPV4)
    """Kinds of personal data to redact from text fields, metadata and Python comments of patches; () for none."""
    ignored_secret_types: tuple[str, ...] = ("Public IP (ipv4)",)
    """detect-secrets detectors to switch off, by the type they report. Public IPs are off by default: in text the PII pass redacts them, in code they are mostly fixtures (8.8.8.8)."""
    verify_patches_apply: bool = True
    """After redacting a patch, check it still applies at the base commit (when the repository is available)."""
    check_license: bool = True
    """Refuse tasks whose licence is not allowed; False only records the licence (mining does this)."""
    scan_workers: int = Field(default=0, ge=0)
    """Processes that scan for secrets; 0 = one per available core (a small batch is scanned in-process)."""

    @field_validator("license_allowlist")
    @classmethod
    def _known_licences(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # A misspelt id would silently allow nothing; custom LicenseRef-* ids are the user's own.
        unknown = [
            spdx for spdx in value if spdx.lower() not in KNOWN_IDS and not spdx.startswith("LicenseRef-")
        ]
        if unknown:
            hints = [difflib.get_close_matches(spdx, list(KNOWN_IDS.values()), n=1) for spdx in unknown]
            shown = ", ".join(
                f"{spdx!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
                for spdx, hint in zip(unknown, hints, strict=True)
            )
            raise ValueError(
                f"unknown SPDX id(s) {shown}; use SPDX ids such as MIT, Apache-2.0, GPL-3.0, or LicenseRef-<name>"
            )
        return value

    @field_validator("ignored_secret_types")
    @classmethod
    def _known_types(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

        known = sorted(get_mapping_from_secret_type_to_class())
        unknown = [name for name in value if name not in known]
        if unknown:
            raise ValueError(f"unknown detector type(s) {unknown}; known: {', '.join(known)}")
        return value


# -- the batch --------------------------------------------------------------------------------------


@dataclass
class _Field:
    """One scanned string of a task: its name, text, and whether it is a patch or a fixed value."""

    name: str
    text: str
    patch: bool = False
    fixed: bool = False
    """True for values that must not change (env commands)."""

    @functools.cached_property
    def layout(self) -> list[PatchLine] | None:
        """The kind of each line of a patch (None for free text); computed when a hit needs it."""
        return classify_patch_lines(self.text.split("\n")) if self.patch else None

    def to_scan(self) -> ScanField:
        return ScanField(self.name, self.text, "patch" if self.patch else "fixed" if self.fixed else "text")


def scrub_tasks(tasks: Iterable[Task], config: ScrubConfig | None = None) -> ScrubResult:
    """Scrub a batch: scan every task, then drop or redact; values found anywhere are swept everywhere."""
    config = config or ScrubConfig()
    batch = list(tasks)
    fields_by_task = [_task_fields(task) for task in batch]
    scans = scan_batch(
        [[f.to_scan() for f in fields] for fields in fields_by_task],
        config.ignored_secret_types,
        config.scan_workers,
        pii=config.pii,
    )
    scanned = [scan.secrets for scan in scans]
    known: dict[str, str] = {}
    for hit in (hit for hits in scanned for hit in hits if hit.sweepable):
        known[hit.value] = prefer_type(known.get(hit.value), hit.type)
    # One expression for the batch: each field is searched once, and split into lines only on a match.
    sweep = (
        re.compile("|".join(re.escape(value) for value in sorted(known, key=len, reverse=True)))
        if known
        else None
    )
    detector = LicenseDetector()
    for repo in dict.fromkeys(task.repo_source for task in batch):
        detector.prefetch(repo, [task.base_commit for task in batch if task.repo_source == repo])
    kept: list[Task] = []
    dropped: list[DroppedTask] = []
    findings: list[Finding] = []
    licenses: dict[str, LicenseInfo] = {}
    for task, fields, hits, scan in zip(batch, fields_by_task, scanned, scans, strict=True):
        if sweep is not None:
            for f in fields:
                if sweep.search(f.text):
                    hits.extend(find_known(f.text, f.name, known, f.layout))
        hits = _unique(hits)
        license_info = detector.detect(task.repo_source, task.base_commit)
        licenses[task.instance_id] = license_info
        outcome = _scrub_one(task, fields, hits, license_info, config, scan.pii)
        if isinstance(outcome, DroppedTask):
            dropped.append(outcome)
        else:
            kept.append(outcome[0])
        action = "dropped" if isinstance(outcome, DroppedTask) else "redacted"
        pii_hits = [] if isinstance(outcome, DroppedTask) else outcome[1]
        findings.extend(_findings(task.instance_id, hits, pii_hits, action))
    return ScrubResult(tuple(kept), tuple(dropped), tuple(findings), licenses)


def _scrub_one(
    task: Task,
    fields: list[_Field],
    hits: list[SecretHit],
    license_info: LicenseInfo,
    config: ScrubConfig,
    pii_found: dict[str, tuple[str, list[PiiHit]]],
) -> DroppedTask | tuple[Task, list[PiiHit]]:
    reasons = _license_reasons(license_info, config)
    if hits and config.policy is SecretPolicy.DROP:
        reasons.append(DropReason(DropCode.SECRET, f"secrets found at {_places(hits)}"))
    stuck = [hit for hit in hits if not hit.kind.rewritable]
    if stuck and config.policy is SecretPolicy.REDACT:
        reasons.append(
            DropReason(
                DropCode.SECRET_UNREDACTABLE,
                f"secrets on lines that cannot be rewritten without breaking the task "
                f"(patch context/removed/header lines or env commands) at {_places(stuck)}",
            )
        )
    if reasons:
        return DroppedTask(task.instance_id, tuple(reasons))
    new_text: dict[str, str] = {}
    for f in fields:
        field_hits = [hit for hit in hits if hit.field == f.name]
        new_text[f.name] = redact(f.text, field_hits, f.layout) if field_hits else f.text
    if config.verify_patches_apply:
        for name in PATCH_FIELDS:
            original = getattr(task, name)
            if (
                new_text[name] != original
                and applies_at(task.repo_source, task.base_commit, new_text[name]) is False
            ):
                return DroppedTask(
                    task.instance_id,
                    (
                        DropReason(
                            DropCode.PATCH_WOULD_NOT_APPLY,
                            f"{name} no longer applies at the base commit after redaction",
                        ),
                    ),
                )
    pii_hits = _redact_pii(fields, new_text, config.pii, pii_found)
    return _rebuild(task, fields, new_text, hits, pii_hits, license_info, config), pii_hits


def _license_reasons(info: LicenseInfo, config: ScrubConfig) -> list[DropReason]:
    if not config.check_license:
        return []
    if not info.spdx_id:
        if config.allow_unknown_license:
            return []
        return [
            DropReason(
                DropCode.LICENSE_UNKNOWN,
                f"licence unknown: {info.reason}; pass --allow-unknown-license (allow_unknown_license=True) to keep such tasks",
            )
        ]
    blockers = disallowed_ids(info.spdx_id, config.license_allowlist, config.allow_unknown_license)
    if not blockers:
        return []
    detail = f" ({info.reason})" if info.reason else ""
    code = (
        DropCode.LICENSE_UNKNOWN
        if all("unrecognized" in b.lower() for b in blockers)
        else DropCode.LICENSE_NOT_ALLOWED
    )
    return [
        DropReason(
            code,
            f"licence {info.spdx_id} from {info.source}{detail} is not allowed: {', '.join(blockers)} not in the allowlist "
            f"[{', '.join(config.license_allowlist)}]; add it with --allow-license ID if you may train on it",
        )
    ]


def _redact_pii(
    fields: list[_Field],
    new_text: dict[str, str],
    kinds: tuple[PiiKind, ...],
    found_before: dict[str, tuple[str, list[PiiHit]]],
) -> list[PiiHit]:
    """Personal data out of `new_text`; `found_before` is what the scan found in the original texts.

    A field that secret redaction left unchanged takes the scan's result as it
    is (the same function of the same text); a changed one is looked at again.
    """
    if not kinds:
        return []
    hits: list[PiiHit] = []
    for f in fields:
        if f.fixed:
            continue
        if new_text[f.name] == f.text:
            if f.name in found_before:
                new_text[f.name], found = found_before[f.name]
                hits.extend(found)
            continue
        if f.patch:
            new_text[f.name], found = redact_pii_in_patch_comments(new_text[f.name], f.name, kinds, f.layout)
        else:
            new_text[f.name], found = redact_pii(new_text[f.name], f.name, kinds)
        hits.extend(found)
    return hits


def _rebuild(
    task: Task,
    fields: list[_Field],
    new_text: dict[str, str],
    hits: list[SecretHit],
    pii_hits: list[PiiHit],
    license_info: LicenseInfo,
    config: ScrubConfig,
) -> Task:
    changes: dict[str, Any] = {name: new_text[name] for name in (*PATCH_FIELDS, *TEXT_FIELDS)}
    by_path = {f.name: new_text[f.name] for f in fields}
    metadata = _replace_strings(task.metadata, "metadata", by_path)
    extra = _replace_strings(task.extra, "extra", by_path)
    pii_counts: dict[str, int] = {}
    for hit in pii_hits:
        pii_counts[hit.kind.value] = pii_counts.get(hit.kind.value, 0) + 1
    metadata["privacy"] = {
        "policy": config.policy.value,
        "secrets_redacted": len({(hit.field, hit.line, hit.type) for hit in hits}),
        "pii_redacted": pii_counts,
        "patch_changed": any(new_text[n] != getattr(task, n) for n in PATCH_FIELDS),
        "license_source": license_info.source,
        "license_conflict": license_info.conflict,
    }
    return task.replace(**changes, metadata=metadata, extra=extra, license=license_info.spdx_id)


# -- fields -----------------------------------------------------------------------------------------


def _task_fields(task: Task) -> list[_Field]:
    fields = [_Field(name, getattr(task, name), patch=True) for name in PATCH_FIELDS]
    fields += [_Field(name, getattr(task, name)) for name in TEXT_FIELDS]
    env = task.env
    env_values = [
        ("env.python", env.python),
        ("env.test_cmd", env.test_cmd),
        ("env.log_parser", env.log_parser),
    ]
    env_values += [(f"env.install[{i}]", v) for i, v in enumerate(env.install)]
    env_values += [(f"env.packages[{i}]", v) for i, v in enumerate(env.packages)]
    fields += [_Field(name, value, fixed=True) for name, value in env_values if value]
    fields += [_Field(path, value) for path, value in _strings(task.metadata, "metadata")]
    fields += [_Field(path, value) for path, value in _strings(task.extra, "extra")]
    return fields


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, string) for every string inside nested dicts and lists."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _replace_strings(value: Any, path: str, by_path: dict[str, str]) -> Any:
    """A copy of `value` with the strings at the given paths replaced."""
    if isinstance(value, str):
        return by_path.get(path, value)
    if isinstance(value, dict):
        return {key: _replace_strings(item, f"{path}.{key}", by_path) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_replace_strings(item, f"{path}[{index}]", by_path) for index, item in enumerate(value)]
    return value


# -- reporting --------------------------------------------------------------------------------------


def _unique(hits: list[SecretHit]) -> list[SecretHit]:
    seen: dict[tuple[str, int, str, str], SecretHit] = {}
    for hit in hits:
        seen.setdefault((hit.field, hit.line, hit.type, hit.value), hit)
    return list(seen.values())


def _places(hits: list[SecretHit], limit: int = 8) -> str:
    places = list(dict.fromkeys(str(hit) for hit in hits))
    more = f" and {len(places) - limit} more" if len(places) > limit else ""
    return ", ".join(places[:limit]) + more


def _findings(instance_id: str, hits: list[SecretHit], pii_hits: list[PiiHit], action: str) -> list[Finding]:
    places = dict.fromkeys((hit.field, hit.line, hit.type) for hit in hits)
    found = [Finding(instance_id, name, line, "secret", kind, action) for name, line, kind in places]
    found += [Finding(instance_id, hit.field, hit.line, "pii", hit.kind.value, action) for hit in pii_hits]
    return found
