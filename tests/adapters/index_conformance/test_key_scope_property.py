"""An API key's scope is a ceiling on both backends: no hit outside it, whatever is asked.

For generated keys and requests, the request is narrowed by the key (api/auth.py), compiled
into the filter the retrieval service uses (retrieval/scope.py) and searched on both
channels of each backend: every hit lies inside the key's scope and the request's, and a
request that names a value outside the key's scope is refused instead. Roles fail closed: a
request naming no role has the key's data roles, or none when the key lists none, so a chunk
restricted to roles is found only by a key or request holding one of them.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_corpus import grid, scoped

from ragsift.api.auth import AuthError, Principal
from ragsift.auth.keys import ApiKey, KeyScope, Role
from ragsift.domain.requests import SearchRequest
from ragsift.ports import SearchIndex
from ragsift.retrieval.scope import compile_filter

TENANTS, DATASETS, LEVELS = ("t1", "t9"), ("ds", "ds2", "ds3"), ("public", "secret")
ROLES = ("hr", "admin", "finance", "sales")  # index_corpus.scoped() restricts to the first 3
SCOPED_ROLES = {r.chunk_id: r.allowed_roles for r in scoped()[0]}


def _values(pool: tuple[str, ...]) -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(st.sampled_from(pool), unique=True, max_size=2).map(tuple)


def _asked(pool: tuple[str, ...]) -> st.SearchStrategy[tuple[str, ...] | None]:
    return st.none() | _values(pool)


keys = st.builds(KeyScope, tenant_ids=_values(TENANTS), dataset_ids=_values(DATASETS),
                 visibilities=_values(LEVELS), data_roles=_values(ROLES))
# roles None and (): requests naming no role
asks = st.fixed_dictionaries({"tenant_ids": _asked(TENANTS), "dataset_ids": _asked(DATASETS),
                              "visibilities": _asked(LEVELS), "roles": _asked(ROLES)})


def _inside(value: str | None, allowed: tuple[str, ...] | None) -> bool:
    return not allowed or value in allowed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(scope=keys, ask=asks)
def test_no_hit_lies_outside_the_keys_scope(
    shared_index: SearchIndex, scope: KeyScope, ask: dict[str, tuple[str, ...] | None]
) -> None:
    key = ApiKey(id="k", name="k", role=Role.READER, scope=scope, hint="rs_x",
                 created_at=datetime.now(UTC))
    ceiling = {"tenant_ids": scope.tenant_ids, "dataset_ids": scope.dataset_ids,
               "visibilities": scope.visibilities, "roles": scope.data_roles}
    try:
        narrowed = Principal(key).ceiling(ask["tenant_ids"], ask["dataset_ids"],
                                          ask["visibilities"], ask["roles"])
    except AuthError as refused:
        assert refused.status == 403
        assert any(asked and limit and set(asked) - set(limit)
                   for asked, limit in ((ask[n], ceiling[n]) for n in ceiling))
        return
    records = {r.chunk_id: r for r in grid()[0]}
    request = SearchRequest(query="alpha", kb_id="grid1", **narrowed)
    search_filter = compile_filter(request, None, None)
    dense = shared_index.search_dense(np.ones(8, dtype=np.float32), search_filter, 100)
    sparse = shared_index.search_sparse("alpha", search_filter, 100)
    for hit in [*dense, *sparse]:
        record = records[hit.chunk_id]
        for name, field in (("tenant_ids", "tenant_id"), ("dataset_ids", "dataset_id"),
                            ("visibilities", "visibility")):
            assert _inside(getattr(record, field), ceiling[name]), (hit.chunk_id, name)
            assert _inside(getattr(record, field), ask[name]), (hit.chunk_id, name)
    # roles, on the KB whose chunks are restricted to roles (and nothing else): the search
    # holds the request's roles, else the key's, never every role
    holds = set(ask["roles"] if ask["roles"] is not None else scope.data_roles)
    roles_only = compile_filter(
        SearchRequest(query="alpha", kb_id="scoped", roles=narrowed["roles"]), None, None)
    wanted = {chunk for chunk, allowed in SCOPED_ROLES.items()
              if not allowed or holds & set(allowed)}
    dense = shared_index.search_dense(np.ones(8, dtype=np.float32), roles_only, 100)
    sparse = shared_index.search_sparse("alpha", roles_only, 100)
    assert {h.chunk_id for h in dense} == {h.chunk_id for h in sparse} == wanted
    if scope.data_roles:  # within the key's roles whatever the request names
        assert all(not SCOPED_ROLES[chunk] or set(SCOPED_ROLES[chunk]) & set(scope.data_roles)
                   for chunk in wanted)
