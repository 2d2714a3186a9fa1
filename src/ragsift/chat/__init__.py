"""The chat layer: answers with citations over the evidence retrieval chose, and conversations."""
