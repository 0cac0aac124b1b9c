//! RESPB/1.
