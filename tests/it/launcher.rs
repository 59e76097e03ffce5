//! Integration tests: launcher.
