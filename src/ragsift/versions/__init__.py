"""Knowledge-base versions: building by reference, the quality gate, activation and
collection (see service.py; the data model is in domain/versions.py)."""
