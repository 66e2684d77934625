"""Tables to markdown: from the parser's structure, or (later) a vision model."""
