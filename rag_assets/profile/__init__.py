"""What a document is (title, issuer, period, kind, language), read from the document itself."""
