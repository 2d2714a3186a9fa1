"""`ragsift kb version`: list, seal (new), activate behind the quality gate, roll back, diff,
check and configure the versions of a knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ragsift.cli.common import echo_json, err, kb_named, open_container, out
from ragsift.cli.options import DataDir, JsonFlag, KbName
from ragsift.domain.errors import InvalidInput

if TYPE_CHECKING:
    from ragsift.domain.versions import ActivationOutcome, GateReport, PublishMode, VersionState

version_app = typer.Typer(
    help="Versions of a knowledge base: seal the draft, activate behind the quality gate, "
         "roll back, compare.", no_args_is_help=True)

VersionArg = Annotated[int, typer.Argument(min=0, help="Version number (version_seq).")]


def _state_json(state: VersionState) -> dict[str, Any]:
    payload = state.model_dump(mode="json", exclude={"gate"})
    payload["gate"] = None if state.gate is None else {
        "queries": len(state.gate.queries), "k": state.gate.k, "max_drop": state.gate.max_drop}
    return payload


def render_gate(report: GateReport) -> None:
    """The gate's verdict, both versions' means and the per-query differences."""
    verdict = "[green]passed[/]" if report.passed else "[red]refused[/]"
    out.print(f"quality gate {verdict}: version {report.candidate_seq} against active "
              f"{report.active_seq}, {report.queries} queries, k={report.k}, "
              f"allowed drop {report.max_drop:.4f}")
    out.print(f"  Recall@{report.k} {report.recall_active:.4f} -> {report.recall_candidate:.4f}"
              f"   MRR@{report.k} {report.mrr_active:.4f} -> {report.mrr_candidate:.4f}")
    for reason in report.reasons:
        out.print(f"  [red]{escape(reason)}[/]")
    if not report.changed:
        out.print("  no query changed")
        return
    table = Table("query", f"Recall@{report.k}", f"MRR@{report.k}", title="queries that changed")
    for diff in report.changed:
        table.add_row(escape(diff.query),
                      f"{diff.recall_active:.3f} -> {diff.recall_candidate:.3f}",
                      f"{diff.mrr_active:.3f} -> {diff.mrr_candidate:.3f}")
    out.print(table)


def _print_outcome(outcome: ActivationOutcome, verb: str) -> None:
    forced = " [yellow](forced past the gate)[/]" if outcome.forced and outcome.gate and \
        not outcome.gate.passed else ""
    out.print(f"{verb} version {outcome.to_seq} (was {outcome.from_seq}){forced}")


@version_app.command("list")
def version_list(kb: KbName, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """The KB's state (active version, draft, policy) and its retained versions."""
    with open_container(data_dir, follow=True) as container:
        knowledge_base = kb_named(container, kb)
        state = container.versions.state(knowledge_base)
        versions = container.versions.versions(knowledge_base)
        activations = container.versions.activations(knowledge_base, limit=10)
    if as_json:
        echo_json({"state": _state_json(state),
                   "versions": [v.model_dump(mode="json") for v in versions],
                   "activations": [a.model_dump(mode="json", exclude={"gate"})
                                   for a in activations]})
        return
    gate = "none" if state.gate is None else (
        f"{len(state.gate.queries)} queries, k={state.gate.k}, max drop {state.gate.max_drop}")
    out.print(f"{escape(kb)}: active version {state.active_seq}, draft {state.draft_seq} "
              f"({state.draft_changes} changes), mode {state.mode}, retention "
              f"{state.retention}, gate: {gate}")
    table = Table("version", "chunks", "added", "retired", "created", "note")
    for version in versions:
        mark = " [green](active)[/]" if version.seq == state.active_seq else ""
        table.add_row(f"{version.seq}{mark}", str(version.chunks), str(version.added),
                      str(version.retired), version.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                      escape(version.note or ""))
    out.print(table)


@version_app.command("new")
def version_new(
    kb: KbName,
    note: Annotated[str | None, typer.Option(help="What this version is about.")] = None,
    rebuild: Annotated[bool, typer.Option(
        "--rebuild", help="Re-chunk every document from its original first (a full rebuild: "
                          "unchanged chunks are shared, only changes are embedded).")] = False,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Seal the draft (the changes since the last version) as a new version."""
    with open_container(data_dir) as container:
        knowledge_base = kb_named(container, kb)
        versions = container.versions
        if rebuild:
            sealed = versions.rebuild(knowledge_base, container.ingestion.reindex, note)
        else:
            sealed = versions.seal(knowledge_base, note)
        state = versions.state(knowledge_base)
    if as_json:
        echo_json({"version": None if sealed is None else sealed.model_dump(mode="json"),
                   "state": _state_json(state)})
        return
    if sealed is None:
        out.print(f"nothing to seal: the draft of {escape(kb)!r} holds no change "
                  f"(active version {state.active_seq})")
        return
    out.print(f"sealed version {sealed.seq}: {sealed.chunks} chunks (+{sealed.added} "
              f"-{sealed.retired}); active version {state.active_seq}")


@version_app.command("activate")
def version_activate(
    version: VersionArg,
    kb: KbName,
    force: Annotated[bool, typer.Option(
        "--force", help="Activate even when the quality gate refuses (recorded).")] = False,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Make VERSION the active one, after the quality gate (exit 2 when it refuses)."""
    from ragsift.domain.versions import GateRefused

    with open_container(data_dir) as container:
        knowledge_base = kb_named(container, kb)
        try:
            outcome = container.versions.activate(knowledge_base, version, force=force)
        except GateRefused as refused:
            if as_json:
                echo_json({"activated": False, "gate": refused.report.model_dump(mode="json")})
            else:
                render_gate(refused.report)
            raise
    if as_json:
        echo_json(outcome.model_dump(mode="json"))
        return
    if outcome.gate is not None:
        render_gate(outcome.gate)
    _print_outcome(outcome, "activated")


@version_app.command("rollback")
def version_rollback(
    kb: KbName,
    version: Annotated[int | None, typer.Argument(
        min=0, help="Version to return to [the one active before].")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Return to a retained version at once (no gate): exactly its results come back."""
    with open_container(data_dir) as container:
        outcome = container.versions.rollback(kb_named(container, kb), version)
    if as_json:
        echo_json(outcome.model_dump(mode="json"))
        return
    _print_outcome(outcome, "rolled back to")


@version_app.command("diff")
def version_diff(
    kb: KbName,
    from_seq: Annotated[int | None, typer.Option("--from", min=0, help="[active version]")
                        ] = None,
    to_seq: Annotated[int | None, typer.Option("--to", min=0, help="[newest version]")] = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Indexed chunks per document that one version adds and removes against another, and
    the metadata keys that changed."""
    with open_container(data_dir, follow=True) as container:
        diff = container.versions.diff(kb_named(container, kb), from_seq, to_seq)
    if as_json:
        echo_json({**diff.model_dump(mode="json"), "added": diff.added,
                   "removed": diff.removed})
        return
    out.print(f"version {diff.from_seq} -> {diff.to_seq}: +{diff.added} -{diff.removed} chunks")
    table = Table("document", "id", "added", "removed", "metadata keys changed")
    for change in diff.documents:
        table.add_row(escape(change.filename), change.document_id, f"+{change.added}",
                      f"-{change.removed}", escape(", ".join(change.metadata_keys)))
    out.print(table)
    if not diff.metadata_compared:
        out.print("metadata changes not listed: a version was sealed before versions kept "
                  "their metadata")


@version_app.command("check")
def version_check(version: VersionArg, kb: KbName, data_dir: DataDir = None,
                  as_json: JsonFlag = False) -> None:
    """Run the quality gate on VERSION against the active one without activating anything."""
    with open_container(data_dir) as container:
        report = container.versions.check(kb_named(container, kb), version)
    if report is None:
        raise InvalidInput(f"{kb!r} has no quality gate: register one with `ragsift kb version "
                           "config --gate QUERIES.jsonl`")
    if as_json:
        echo_json(report.model_dump(mode="json"))
        return
    render_gate(report)


@version_app.command("config")
def version_config(
    kb: KbName,
    mode: Annotated[str | None, typer.Option(
        help="auto: every change is published at once; staged: changes wait in the draft "
             "until `new` and `activate`.")] = None,
    retention: Annotated[int | None, typer.Option(
        min=1, help="Versions kept (the newest, plus the active one).")] = None,
    gate: Annotated[Path | None, typer.Option(
        help="Register a quality gate: JSONL {query, relevant: {doc id or filename: grade}}.")
    ] = None,
    gate_k: Annotated[int | None, typer.Option(min=1, max=200, help="k of Recall@k, MRR@k [5]."
                                               )] = None,
    gate_max_drop: Annotated[float | None, typer.Option(
        min=0.0, max=1.0, help="Largest allowed drop of either mean [0].")] = None,
    no_gate: Annotated[bool, typer.Option("--no-gate", help="Remove the quality gate.")
                       ] = False,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Show or change the publish mode, the retention and the quality gate of a KB."""
    from ragsift.domain.versions import GateConfig
    from ragsift.versions.gate import read_gate_queries

    if mode is not None and mode not in ("auto", "staged"):
        raise InvalidInput("--mode must be auto or staged")
    if no_gate and (gate or gate_k or gate_max_drop is not None):
        raise InvalidInput("--no-gate cannot be combined with the other gate options")
    queries = read_gate_queries(gate) if gate is not None else None
    with open_container(data_dir) as container:
        knowledge_base = kb_named(container, kb)
        versions = container.versions
        current = versions.state(knowledge_base).gate
        changes: dict[str, Any] = {}
        if no_gate:
            changes["gate"] = None
        elif queries is not None or gate_k is not None or gate_max_drop is not None:
            if queries is None and current is None:
                raise InvalidInput("no quality gate registered yet: give --gate QUERIES.jsonl")
            base = current or GateConfig(queries=queries or ())
            changes["gate"] = GateConfig(
                queries=queries or base.queries, k=gate_k or base.k,
                max_drop=base.max_drop if gate_max_drop is None else gate_max_drop)
        published: PublishMode | None = mode  # type: ignore[assignment]
        state = versions.configure(knowledge_base, published, retention, **changes)
    if as_json:
        echo_json(_state_json(state))
        return
    gate_text = "none" if state.gate is None else (
        f"{len(state.gate.queries)} queries, k={state.gate.k}, max drop {state.gate.max_drop}")
    out.print(f"{escape(kb)}: mode {state.mode}, retention {state.retention}, gate: "
              f"{gate_text}; active version {state.active_seq}")
    if state.gate is not None and state.mode == "auto":
        err.print("note: in auto mode every change is published behind the gate; a refused "
                  "version stays sealed but inactive")
