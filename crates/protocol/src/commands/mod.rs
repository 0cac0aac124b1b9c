//! The command table.
