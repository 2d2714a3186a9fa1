"""The web pages (retrieval debug, chat, documents, FAQ) served by the API itself: static HTML,
CSS and JS."""

from ragsift.web.routes import install_web

__all__ = ["install_web"]
