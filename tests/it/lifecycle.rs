//! Integration tests: lifecycle.
