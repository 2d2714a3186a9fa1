"""Offline retrieval evaluation: ranking metrics matching trec_eval, computed per query."""
