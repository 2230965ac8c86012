"""What several test modules share: corpus paths, the miltext command as a user runs it, the
LSP client, texts, golden files. Test modules import from here, never from one another or from
conftest.py (which keeps only the fixtures)."""
