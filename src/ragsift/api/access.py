"""Which role each route needs: one table, read by the one authorization dependency.

Rules are matched in order on (method, route template); the first match wins. A route no
rule names needs `admin` (closed by default), and `OPEN` routes need no key at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragsift.auth.keys import Role

OPEN = None


@dataclass(frozen=True, slots=True)
class Rule:
    methods: frozenset[str]
    path: re.Pattern[str]
    role: Role | None


def _rule(methods: str, path: str, role: Role | None) -> Rule:
    return Rule(frozenset(methods.split()), re.compile(path), role)


_ANY = "GET HEAD POST PUT PATCH DELETE"
RULES: tuple[Rule, ...] = (
    _rule(_ANY, r"/healthz|/readyz", OPEN),
    _rule(_ANY, r"/api/retrieval/.*", Role.READER),
    _rule(_ANY, r"/api/chat(/stream)?", Role.READER),
    _rule(_ANY, r"/api/conversations(/.*)?", Role.READER),  # each key sees its own
    _rule("GET HEAD", r"/api/feedback", Role.READER),  # on its own conversations
    _rule("GET HEAD DELETE", r"/api/kbs/\{kb_id\}/conversations(/\{conversation_id\})?",
          Role.READER),
    _rule("POST", r"/dify/retrieval", Role.READER),  # Dify's External Knowledge API
    _rule("GET HEAD", r"/v1/models(/\{model\})?", Role.READER),  # OpenAI-compatible chat
    _rule("POST", r"/v1/chat/completions", Role.READER),
    _rule("POST", r"/v1/embeddings", Role.READER),
    _rule("GET HEAD", r"/api/kbs(/\{kb_id\})?", Role.READER),
    _rule("GET HEAD", r"/api/kbs/\{kb_id\}/settings", Role.READER),  # PATCH: admin
    # the debug page's query history: read like the KB, cleared by its editors (issue 38)
    _rule("GET HEAD", r"/api/kbs/\{kb_id\}/queries", Role.READER),
    _rule("DELETE", r"/api/kbs/\{kb_id\}/queries", Role.EDITOR),
    # the evaluation view: read-only, bounded by RAGSIFT_WEB_EVAL_MAX_QUERIES
    _rule("POST", r"/api/kbs/\{kb_id\}/evaluation", Role.READER),
    # its stored labelled sets: read like the KB, saved and deleted by its editors
    _rule("GET HEAD", r"/api/kbs/\{kb_id\}/labelled-sets", Role.READER),
    _rule("POST", r"/api/kbs/\{kb_id\}/labelled-sets", Role.EDITOR),
    _rule("DELETE", r"/api/kbs/\{kb_id\}/labelled-sets/\{set_id\}", Role.EDITOR),
    _rule("GET HEAD", r"/api/kbs/\{kb_id\}/documents|/api/documents/\{document_id\}"
          r"(/chunks|/assets|/pages/\{page\}\.png)?", Role.READER),
    _rule("GET HEAD", r"/api/assets/\{asset_id\}", Role.READER),
    _rule("GET HEAD", r"/api/kbs/\{kb_id\}/metadata-keys", Role.READER),  # within its scope
    _rule("GET HEAD", r"/api/kbs/\{kb_id\}/texts", Role.READER),  # texts by key
    _rule("POST DELETE", r"/api/kbs/\{kb_id\}/texts", Role.EDITOR),
    _rule("POST PUT PATCH DELETE", r"/api/kbs/\{kb_id\}/documents|/api/documents/.*", Role.EDITOR),
    _rule("GET HEAD", r"/api/kbs/\{kb_id\}/faq(/\{faq_id\})?", Role.READER),
    _rule("PATCH DELETE", r"/api/kbs/\{kb_id\}/faq/\{faq_id\}", Role.EDITOR),
    _rule("POST", r"/api/kbs/\{kb_id\}/(faq|reindex)", Role.EDITOR),
    _rule(_ANY, r"/api/kbs(/.*)?", Role.ADMIN),  # KBs, versions, rebuild-sparse
    _rule(_ANY, r"/api/(keys|audit)(/.*)?", Role.ADMIN),
    _rule(_ANY, r"/metrics", Role.ADMIN),  # RAGSIFT_METRICS_PUBLIC opens it
)


def required_role(method: str, route: str) -> Role | None:
    """The role a request needs (None: no key needed)."""
    for rule in RULES:
        if method in rule.methods and rule.path.fullmatch(route):
            return rule.role
    return Role.ADMIN
