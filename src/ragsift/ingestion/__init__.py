"""Document ingestion: parsing files into sections, chunking and indexing them."""
