"""The language server (`shardshift lsp`) and what it knows of keys."""
