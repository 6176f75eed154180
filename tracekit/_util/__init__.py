"""Small helpers every stage shares: GC pauses, lazy names, terminal text."""
