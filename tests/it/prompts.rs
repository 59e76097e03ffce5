//! Integration tests: prompts.
