"""Errors a person can act on: each names the document and what is wrong with it."""


class DocumentError(Exception):
    """The input document cannot be processed (empty, corrupt, encrypted, unsupported)."""


class ConfigurationError(Exception):
    """A setting points at something that is not there (a model folder, a template name)."""
