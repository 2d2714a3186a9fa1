"""`ragsift search/explain --server URL`: the same search through a running `ragsift serve`.

The CLI cannot open a data directory that a server holds; with --server it asks the server
instead, through ragsift.client, and renders the answer as the local search would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragsift.cli.common import CliFailure

if TYPE_CHECKING:
    from ragsift.domain.results import RetrievalResult



def remote_search(server: str, api_key: str | None, kb: list[str], query: str,
                  fields: dict[str, Any]) -> RetrievalResult:
    """One retrieval by the server; `fields` are SearchBody fields (None: the server's default).

    explain is asked even for search: it is the one answer with hits, FAQ hits and trace.
    """
    # imported here: the client brings httpx and the API's models, which --help does not need
    from ragsift.client import (
        ClientValidationError,
        RagsiftApiError,
        RagsiftClient,
        RagsiftClientError,
    )
    from ragsift.domain.results import RetrievalResult

    options = {name: value for name, value in fields.items() if value not in (None, [])}
    try:
        # an empty RAGSIFT_API_KEY means none, as for a --no-auth server
        with RagsiftClient(server, api_key=api_key or None) as client:
            explained = (client.explain(query, kb=kb[0], **options) if len(kb) == 1
                         else client.explain(query, kbs=kb, **options))
    except ClientValidationError as exc:  # checked before sending, as the server would
        raise CliFailure(exc.message, 2) from exc
    except RagsiftApiError as exc:
        # the request's fault: exit 2 as for bad input locally; the server's: 1
        raise CliFailure(f"{server}: {exc}", 2 if exc.status < 500 else 1) from exc
    except RagsiftClientError as exc:
        raise CliFailure(f"{server}: {exc}", 1) from exc
    return RetrievalResult(hits=tuple(explained.results), faq_hits=tuple(explained.faq),
                           trace=explained.trace)
