"""Where documents come from: the inbox, partition keys, file formats, the raw record."""
