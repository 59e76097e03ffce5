//! Integration tests: `provider_exec`.
