"""Plain data of ragsift: models, filters, results, trace and errors.

Nothing in this package imports any other part of ragsift.
"""
