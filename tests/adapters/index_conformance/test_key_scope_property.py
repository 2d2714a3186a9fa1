"""An API key's scope is a ceiling on both backends: no hit outside it, whatever is asked.

For generated keys and requests, the request is narrowed by the key (api/auth.py), compiled
into the filter the retrieval service uses (retrieval/scope.py) and searched on both
channels of each backend: every hit lies inside the key's scope and the request's, and a
request that names a value outside the key's scope is refused instead.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from index_corpus import grid

from ragsift.api.auth import AuthError, Principal
from ragsift.auth.keys import ApiKey, KeyScope, Role
from ragsift.domain.requests import SearchRequest
from ragsift.ports import SearchIndex
from ragsift.retrieval.scope import compile_filter

TENANTS, DATASETS, LEVELS = ("t1", "t9"), ("ds", "ds2", "ds3"), ("public", "secret")


def _values(pool: tuple[str, ...]) -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(st.sampled_from(pool), unique=True, max_size=2).map(tuple)


def _asked(pool: tuple[str, ...]) -> st.SearchStrategy[tuple[str, ...] | None]:
    return st.none() | _values(pool)


keys = st.builds(KeyScope, tenant_ids=_values(TENANTS), dataset_ids=_values(DATASETS),
                 visibilities=_values(LEVELS))
asks = st.fixed_dictionaries({"tenant_ids": _asked(TENANTS), "dataset_ids": _asked(DATASETS),
                              "visibilities": _asked(LEVELS)})


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
               "visibilities": scope.visibilities}
    try:
        narrowed = Principal(key).ceiling(ask["tenant_ids"], ask["dataset_ids"],
                                          ask["visibilities"], None)
    except AuthError as refused:
        assert refused.status == 403
        assert any(asked and limit and set(asked) - set(limit)
                   for asked, limit in ((ask[n], ceiling[n]) for n in ceiling))
        return
    request = SearchRequest(query="alpha", kb_id="grid1", **narrowed)
    search_filter = compile_filter(request, None, None)
    records = {r.chunk_id: r for r in grid()[0]}
    dense = shared_index.search_dense(np.ones(8, dtype=np.float32), search_filter, 100)
    sparse = shared_index.search_sparse("alpha", search_filter, 100)
    for hit in [*dense, *sparse]:
        record = records[hit.chunk_id]
        for name, field in (("tenant_ids", "tenant_id"), ("dataset_ids", "dataset_id"),
                            ("visibilities", "visibility")):
            assert _inside(getattr(record, field), ceiling[name]), (hit.chunk_id, name)
            assert _inside(getattr(record, field), ask[name]), (hit.chunk_id, name)
