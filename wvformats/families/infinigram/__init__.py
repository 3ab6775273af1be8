"""infini-gram indexes: the file set, queries on memory maps, and building an index."""
