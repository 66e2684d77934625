"""Layer 1: parsers see the document and return their own output untouched."""
