"""The DuckDB store: many runs in one file, ingested fast, nothing lost."""
