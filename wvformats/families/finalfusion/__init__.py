"""finalfusion (``.fifu``): the chunked format, its vocabularies, storages and subword lookups."""
